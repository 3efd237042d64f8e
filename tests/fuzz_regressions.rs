//! Inputs the fuzz targets (`fuzz/`) found crashing the readers, each now refused with a
//! clear message instead of a panic. The inputs are the fuzzer's, minimised by hand to
//! what still crashed the old code.

use std::path::Path;

use theia::scene::mem::{parse_params, read_hex_words};

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
