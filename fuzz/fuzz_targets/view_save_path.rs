//! `theia view`'s first save of an in-memory shader: `PUT /shader?path=P&overwrite=B` as
//! anything on the machine may send it → route. Besides "no panic": an accepted path is a
//! relative `.shdr` file name whose components stay below the current directory (no root,
//! no `..`, no drive prefix), so the save can only go where the README says.
#![no_main]

use std::path::Component;

use libfuzzer_sys::fuzz_target;
use theia::tools::viewer::{percent_decode, save_path, Route};

fuzz_target!(|data: &[u8]| {
    let Ok(query) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(Route::SaveShader(save_as)) = Route::parse("PUT", &format!("/shader?{query}")) else {
        return;
    };
    let Some(save_as) = save_as else {
        return;
    };
    let path = &save_as.path;
    assert!(path.is_relative(), "accepted {query}");
    assert!(
        path.components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir)),
        "accepted {query}"
    );
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    assert!(
        name.len() > ".shdr".len() && name.ends_with(".shdr"),
        "accepted {query}"
    );
    // The route's path is the decoded query value, checked as such.
    let raw = theia::tools::viewer::query_value(query, "path").unwrap();
    let decoded = percent_decode(raw).unwrap();
    assert_eq!(save_path(&decoded).as_ref(), Ok(path));
});
