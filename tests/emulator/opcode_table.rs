//! The opcode table against the spec's instruction lists, read at test time: the opcode
//! table of isa_and_formats §1.3 (code, mnemonic, type, whether the RTL implements it) and
//! the master opcode table of alu_semantics §3 (latency), row by row and both ways: no
//! opcode missing on either side.

use crate::common;

use std::collections::BTreeMap;

use theia::emu::isa::{Hardware, Opcode, OpcodeInfo, OPCODES};

/// The body rows of the markdown table whose header line starts with `header`, split into
/// trimmed cells.
fn table(text: &str, header: &str) -> Vec<Vec<String>> {
    let mut lines = text.lines().skip_while(|line| !line.starts_with(header));
    assert!(lines.next().is_some(), "no table starting `{header}`");
    lines
        .skip(1) // |---|---|
        .take_while(|line| line.starts_with('|'))
        .map(|line| {
            let inner = line.trim().trim_start_matches('|').trim_end_matches('|');
            inner
                .split('|')
                .map(|cell| cell.trim().to_string())
                .collect()
        })
        .collect()
}

fn spec(file: &str) -> String {
    let path = common::shared_path(&format!("spec/{file}"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn ours() -> BTreeMap<u16, &'static OpcodeInfo> {
    OPCODES.iter().map(|row| (row.opcode.code(), row)).collect()
}

/// The leading decimal number of a cell (`71 (5 if special)`, `≈40`).
fn leading_number(cell: &str) -> Option<u32> {
    let digits: String = cell
        .trim_start_matches(|c: char| c == '≈' || c.is_whitespace())
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

#[test]
#[cfg_attr(not(conformance_data), ignore = "needs ../shared")]
fn every_opcode_of_the_spec_is_in_the_table_and_no_other() {
    let rows = table(&spec("isa_and_formats.md"), "| Hex | Dec |");
    let mut listed = BTreeMap::new();
    for cells in &rows {
        let code = u16::from_str_radix(cells[0].trim_start_matches("0x"), 16)
            .unwrap_or_else(|_| panic!("opcode cell `{}`", cells[0]));
        let mnemonic = cells[3].as_str();
        if mnemonic.starts_with('(') {
            // `(unassigned)`: the core hangs; the emulator must not define it either.
            assert_eq!(Opcode::from_code(code), None, "{code:#04x} is unassigned");
            continue;
        }
        let type2 = cells[4].starts_with("II");
        let hardware = match cells[cells.len() - 2].as_str() {
            "yes" => Hardware::Implemented,
            "no" => Hardware::Unfinished,
            "DEBUG only" => Hardware::DebugOnly,
            other => panic!("{mnemonic}: implementation cell `{other}`"),
        };
        listed.insert(code, (mnemonic.to_string(), type2, hardware));
    }
    let ours = ours();
    assert_eq!(
        listed.keys().collect::<Vec<_>>(),
        ours.keys().collect::<Vec<_>>(),
        "opcode codes: spec (left) against the table (right)"
    );
    for (code, (mnemonic, type2, hardware)) in &listed {
        let row = ours[code];
        assert_eq!(row.mnemonic, mnemonic, "{code:#04x}");
        assert_eq!(row.opcode.is_type2(), *type2, "{mnemonic}: type II");
        assert_eq!(
            row.hardware, *hardware,
            "{mnemonic}: implemented by the RTL"
        );
    }
}

#[test]
#[cfg_attr(not(conformance_data), ignore = "needs ../shared")]
fn every_latency_matches_the_spec() {
    let text = spec("alu_semantics.md");
    let rows = table(&text, "| op (dec/hex) | name |");
    // code -> (mnemonic if the row names it, latency cell)
    let mut listed: BTreeMap<u16, (Option<String>, String)> = BTreeMap::new();
    for cells in &rows {
        let codes: Vec<u16> = match cells[0].split_once("..") {
            Some((first, last)) => {
                (first.trim().parse().unwrap()..=last.trim().parse().unwrap()).collect()
            }
            None => match cells[0].split('/').next().unwrap().trim().parse() {
                Ok(code) => vec![code],
                Err(_) => continue, // "any other 16-bit value"
            },
        };
        // `DEBUG_PRINT (only if `DEBUG`)`, `RETURN (II)`: the name is what precedes ` (`.
        let names = cells[1].split(" (").next().unwrap();
        let latency = cells[cells.len() - 2].clone();
        if names.starts_with('(') {
            for code in codes {
                assert_eq!(Opcode::from_code(code), None, "{code:#04x} is unused");
                assert_eq!(latency, "∞", "{code:#04x}");
            }
            continue;
        }
        let names: Vec<&str> = names.split_whitespace().collect();
        for (k, &code) in codes.iter().enumerate() {
            // `JGY … JLEY` names only the first and the last of its range.
            let name = if names.len() == codes.len() {
                Some(names[k])
            } else if k == 0 {
                names.first().copied()
            } else if k + 1 == codes.len() {
                names.last().copied()
            } else {
                None
            };
            listed.insert(code, (name.map(str::to_string), latency.clone()));
        }
    }
    let ours = ours();
    assert_eq!(
        listed.keys().collect::<Vec<_>>(),
        ours.keys().collect::<Vec<_>>(),
        "opcode codes: spec (left) against the table (right)"
    );
    for (code, (name, latency)) in &listed {
        let row = ours[code];
        if let Some(name) = name {
            assert_eq!(row.mnemonic, name, "{code:#04x}");
        }
        let mnemonic = row.mnemonic;
        match latency.as_str() {
            // The RTL never finishes these; the emulator runs the manual's semantics.
            "∞" => assert_eq!(row.hardware, Hardware::Unfinished, "{mnemonic}"),
            // Memory-dependent: §7 gives the lower bound the table uses.
            "var." => {
                let bound = format!("{mnemonic}: memory dependent (≥ ");
                let at = text
                    .find(&bound)
                    .unwrap_or_else(|| panic!("§7 on {mnemonic}"));
                assert_eq!(
                    leading_number(&text[at + bound.len()..]),
                    Some(row.latency),
                    "{mnemonic}"
                );
            }
            cell => assert_eq!(
                leading_number(cell),
                Some(row.latency),
                "{mnemonic}: `{cell}`"
            ),
        }
    }
}
