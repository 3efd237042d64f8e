//! Inputs the fuzz targets (`fuzz/`) found crashing the readers, each now refused with a
//! clear message instead of a panic. The inputs are the fuzzer's, minimised by hand to
//! what still crashed the old code.

use std::path::Path;

use theia::io::image::{decode_image, parse_p3};
use theia::io::scene::mem::{parse_params, read_hex_words};
use theia::io::scene::obj::{load_obj_text, MemoryAssets, ObjOptions};

fn hex_error(text: &str) -> String {
    match read_hex_words(text, Path::new("Params.mem")) {
        Ok(words) => panic!("read {} words, expected an error", words.len()),
        Err(e) => e.to_string(),
    }
}

fn hex_values(text: &str) -> Vec<u32> {
    read_hex_words(text, Path::new("Params.mem"))
        .unwrap_or_else(|e| panic!("{e}"))
        .iter()
        .map(|t| t.value)
        .collect()
}

fn p3_error(text: &str) -> String {
    match parse_p3(text) {
        Ok(image) => panic!("parsed a {}x{} image", image.width, image.height),
        Err(message) => message,
    }
}

/// mem target: the tokenizer sliced the line at byte i + 1 inside a multi-byte character
/// ("byte index 1 is not a char boundary; it is inside '؛'").
#[test]
fn mem_multibyte_character_in_a_word_is_a_syntax_error() {
    assert_eq!(
        hex_error("\u{61b}"),
        "Params.mem:1:1: expected a hexadecimal word of at most 8 digits, found `\u{61b}`"
    );
    assert_eq!(
        hex_error("12é 3"),
        "Params.mem:1:1: expected a hexadecimal word of at most 8 digits, found `12é`"
    );
    // Columns count characters, not bytes: `zz` is the 5th character, the 6th byte.
    assert_eq!(
        hex_error("é 1 zz"),
        "Params.mem:1:1: expected a hexadecimal word of at most 8 digits, found `é`"
    );
    assert_eq!(
        hex_error("// é\n1 ü zz"),
        "Params.mem:2:3: expected a hexadecimal word of at most 8 digits, found `ü`"
    );
    assert_eq!(
        hex_error("/* ü */ 1 zz"),
        "Params.mem:1:11: expected a hexadecimal word of at most 8 digits, found `zz`"
    );
}

/// mem target: the same slicing inside a block comment (a comment may hold any text).
#[test]
fn mem_multibyte_characters_in_comments_are_skipped() {
    assert_eq!(hex_values("/* Ѐ */ 2A"), vec![0x2A]);
    assert_eq!(
        hex_values("1 /* partitions ц\n ώ */ 2 // é\n3"),
        vec![1, 2, 3]
    );
    assert_eq!(hex_values("0 //texture sïze\n"), vec![0]);
}

/// mem target: the same input through the Params.mem reader reports the file and place.
#[test]
fn mem_params_with_a_multibyte_word_names_file_line_column() {
    let err = parse_params("2A\n0 20000 Ͻ\n", Path::new("scene/Params.mem")).unwrap_err();
    assert_eq!(
        err.to_string(),
        "scene/Params.mem:2:9: expected a hexadecimal word of at most 8 digits, found `Ͻ`"
    );
}

/// mem target (parse_p3): `value * 255` overflowed for values above 16843009.
#[test]
fn p3_channel_value_above_the_maximum_is_an_error() {
    assert_eq!(
        p3_error("P3\r\n200 200\r\n255\r040400000 0"),
        "channel value 40400000 is above the maximum value 255"
    );
    assert_eq!(
        p3_error("P3 1 1 255 16843010 0 0"),
        "channel value 16843010 is above the maximum value 255"
    );
    // Values above the maximum used to wrap silently into a byte.
    assert_eq!(
        p3_error("P3 1 1 255 256 0 0"),
        "channel value 256 is above the maximum value 255"
    );
    let image = parse_p3("P3 1 1 15 15 0 7").unwrap();
    assert_eq!(image.data, vec![255, 0, 119]);
}

/// mem target (parse_p3): a header claiming a huge image reserved all of it up front and
/// ran out of memory (malloc(3600060000)); the magic number was never checked either.
#[test]
fn p3_huge_header_is_refused_without_reserving_it() {
    assert_eq!(
        p3_error("P3\t1200020000\n1\n1"),
        "expected 3600060000 channel values for 1200020000x1, found 0"
    );
    assert_eq!(
        p3_error("P3 20000 2000000 27\r"),
        "expected 120000000000 channel values for 20000x2000000, found 0"
    );
    assert_eq!(
        p3_error("0 20000 2000000 27\r"),
        "expected the plain PPM magic number `P3`, found `0`"
    );
    assert_eq!(
        p3_error("T 1200020000 1 1\n1\n1"),
        "expected the plain PPM magic number `P3`, found `T`"
    );
    assert_eq!(
        p3_error("# only a comment\n"),
        "empty file: expected a plain PPM starting with `P3`"
    );
}

#[cfg(target_pointer_width = "64")]
#[test]
fn p3_size_overflowing_usize_is_an_error() {
    assert_eq!(
        p3_error("P3 4294967295 4294967295 255"),
        "image size 4294967295x4294967295 is too large"
    );
}

/// image target: the bytes `theia compare` reads go through the same P3 reader.
#[test]
fn decoded_ppm_bytes_get_the_same_checks() {
    assert_eq!(
        decode_image(b"P3 2 1 255 1 2 3 4 5 999").unwrap_err(),
        "channel value 999 is above the maximum value 255"
    );
    let image = decode_image(b"P3 2 1 255 1 2 3 4 5 x").unwrap();
    assert_eq!(image.data, vec![1, 2, 3, 4, 5, 0]);
}

/// obj target: a texture or normal index reaching before the first `vt`/`vn` overflows
/// `vt * 2` / `vn * 3` inside tobj 4.0.5 (lib.rs:852 and :860, "attempt to multiply with
/// overflow") in builds with overflow checks (release builds wrap and then refuse the
/// index). The OBJ validator (src/io/scene/obj/parse.rs) refuses a bad `vt` index before tobj
/// sees it, and drops every `vn` index (normals are not used).
#[test]
fn obj_relative_index_before_the_first_vt_or_vn_is_an_error_or_a_warning() {
    let options = ObjOptions {
        width: 16,
        height: 16,
        ..Default::default()
    };
    let text = "v 4 0 4\nvt 0 8\nf 1/-7 8 8";
    let result = load_obj_text(text, Path::new("fuzz.obj"), &MemoryAssets(&[]), &options);
    assert_eq!(
        result.expect_err(text).to_string(),
        "fuzz.obj:3:3: vt index -7 does not exist: 1 `vt` line so far"
    );
    // Normals are not used: the bad index is a warning, and tobj never sees it.
    let text = "v 4 0 4\nv 0 0 0\nv 0 4 0\nvn 0 0 1\nf 1//-7 2 3\n";
    let loaded = load_obj_text(text, Path::new("fuzz.obj"), &MemoryAssets(&[]), &options)
        .expect("a bad vn index does not stop the load");
    assert_eq!(
        loaded.notes[0],
        "warning: fuzz.obj:5:6: vn index -7 does not exist: 1 `vn` line so far; it is ignored (the face is lit flat)"
    );
}

/// PICA200 sources that once could panic or reserve huge memory: each is a located error.
#[test]
fn pica200_sizes_out_of_range_are_errors() {
    use theia::stage::pica200::asm::assemble;
    for (source, expected) in [
        (
            ".constfa big[99999999999]\n",
            "t.pica:1:10: error: invalid array size",
        ),
        (
            ".fvec huge[4000000000]\n",
            "t.pica:1:7: error: not enough uniform space",
        ),
        (
            ".proc main\n    mov o0, v0.ẋ\n.end\n",
            "t.pica:2:13: error: invalid swizzle",
        ),
        (".alias é r0\n", "t.pica:1:8: error: invalid alias name"),
    ] {
        let error = assemble(source, Path::new("t.pica"))
            .map(|_| ())
            .unwrap_err()
            .to_string();
        assert!(error.starts_with(expected), "{source:?}: {error}");
    }
    // A --const name starting with a multibyte character is refused, not split mid-char.
    let program = theia::stage::pica200::PicaProgram {
        code: vec![0x88000000],
        ..Default::default()
    };
    let named = theia::stage::NamedVec4 {
        name: "ç1".to_string(),
        value: [0.0; 4],
    };
    assert!(theia::stage::pica200::PicaShader::new(program, &[named]).is_err());
}

/// Found by fuzz target `pica_asm`: an empty `.proc main` assembles to no words, and its
/// listing left `main` out, so the listing did not re-assemble.
#[test]
fn pica200_an_empty_main_s_listing_reassembles() {
    use theia::stage::pica200::asm::{assemble, assemble_with, Options};
    let file = Path::new("t.pica");
    let program = assemble(".proc main\n.end\n", file).unwrap().program;
    assert!(program.code.is_empty());
    let listing = theia::stage::pica200::disasm::listing(&program);
    let options = Options {
        allow_input_pairs: true,
        auto_nop: false,
    };
    let again = assemble_with(&listing, file, options)
        .unwrap_or_else(|e| panic!("{e}\n--- listing:\n{listing}"))
        .program;
    assert_eq!(again.code, program.code);
    assert_eq!(again.entry, program.entry);
}
