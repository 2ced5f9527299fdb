// SPDX-License-Identifier: MIT OR Apache-2.0
//! The syzkaller description (qemu/syzkaller/directnvm.txt) against the ABI crate: the .const
//! file must be exactly what the ABI crate generates (`DNVM_SYZ_BLESS=1` rewrites it), every const the
//! description names must be in it, every ioctl of the ABI must be described, and every struct
//! must have the size and field count of its Rust twin.

use std::collections::BTreeMap;
use std::mem::size_of;

use directnvm_abi::*;

const TXT: &str = include_str!("../../syzkaller/directnvm.txt");
const CONST_PATH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../syzkaller/directnvm.txt.const");

/// Every const the description may use, from the ABI crate.
fn consts() -> Vec<(&'static str, u64)> {
    vec![
        ("DNVM_IOC_CLAIM", DNVM_IOC_CLAIM.into()),
        ("DNVM_IOC_CONTROLLER_INIT", DNVM_IOC_CONTROLLER_INIT.into()),
        ("DNVM_IOC_GET_INFO", DNVM_IOC_GET_INFO.into()),
        ("DNVM_IOC_GET_LAYOUT", DNVM_IOC_GET_LAYOUT.into()),
        ("DNVM_IOC_GET_STATS", DNVM_IOC_GET_STATS.into()),
        ("DNVM_IOC_RELEASE", DNVM_IOC_RELEASE.into()),
        ("DNVM_IOC_SET_ARBITRATION", DNVM_IOC_SET_ARBITRATION.into()),
        ("DNVM_MAX_REGIONS", DNVM_MAX_REGIONS as u64),
        ("HDU_IOC_GET_INFO", HDU_IOC_GET_INFO.into()),
        ("HDU_IOC_GET_STATS", HDU_IOC_GET_STATS.into()),
        ("HDU_IOC_RESET", HDU_IOC_RESET.into()),
    ]
}

fn render() -> String {
    let mut s = String::from(
        "# Generated from kernel/abi (directnvm-abi) by qemu/guest-tests/src/syzlang.rs. DO NOT EDIT.\n\
         # The ioctl encoding is asm-generic: the same numbers on every listed arch.\n\
         arches = amd64, arm64, riscv64\n",
    );
    for (n, v) in consts() {
        s.push_str(&format!("{n} = {v}\n"));
    }
    s
}

#[test]
fn const_file_is_generated_from_the_abi() {
    let want = render();
    if std::env::var("DNVM_SYZ_BLESS").is_ok_and(|v| v == "1") {
        std::fs::write(CONST_PATH, &want).unwrap();
    }
    let got = std::fs::read_to_string(CONST_PATH).unwrap_or_default();
    assert_eq!(got, want, "{CONST_PATH} is stale: run DNVM_SYZ_BLESS=1 cargo test -p dnvm-guest-tests syzlang");
}

#[test]
fn every_const_named_is_defined_and_every_ioctl_described() {
    let known: BTreeMap<&str, u64> = consts().into_iter().collect();
    for (i, part) in TXT.split("const[").enumerate().skip(1) {
        let name = part.split(']').next().unwrap();
        if name.chars().all(|c| c.is_ascii_digit()) {
            continue;
        }
        assert!(known.contains_key(name), "const[{name}] (occurrence {i}) not generated from the ABI");
    }
    for name in known.keys().filter(|n| n.contains("_IOC_")) {
        let call = format!("ioctl${name}(");
        assert!(TXT.contains(&call), "ioctl {name} is not described");
        let line = TXT.lines().find(|l| l.starts_with(&call)).unwrap();
        assert!(line.contains(&format!("cmd const[{name}]")), "{name}: wrong cmd in `{line}`");
        let fd = if name.starts_with("HDU") { "fd fd_hdu" } else { "fd fd_directnvm" };
        assert!(line.contains(fd), "{name}: wrong fd resource in `{line}`");
    }
}

/// (size, align, fields) of each struct in the description, C layout rules.
fn layouts() -> BTreeMap<String, (usize, usize, usize)> {
    let consts: BTreeMap<&str, u64> = consts().into_iter().collect();
    let mut out: BTreeMap<String, (usize, usize, usize)> = BTreeMap::new();
    let mut cur: Option<(String, Vec<(usize, usize)>)> = None;
    for line in TXT.lines() {
        let l = line.trim();
        if l.is_empty() || l.starts_with('#') {
            continue;
        }
        if let Some(name) = l.strip_suffix(" {") {
            cur = Some((name.to_string(), Vec::new()));
            continue;
        }
        if l == "}" {
            let (name, fields) = cur.take().expect("} outside a struct");
            let (mut size, mut align) = (0usize, 1usize);
            for &(s, a) in &fields {
                size = size.div_ceil(a) * a + s;
                align = align.max(a);
            }
            out.insert(name, (size.div_ceil(align) * align, align, fields.len()));
            continue;
        }
        if let Some((_, fields)) = cur.as_mut() {
            let ty = l.split_once(char::is_whitespace).map(|(_, t)| t.trim()).unwrap_or_else(|| panic!("field without type: {l}"));
            let scalar = |t: &str| -> Option<usize> {
                let base = t.split('[').next().unwrap();
                match base {
                    "int8" => Some(1),
                    "int16" => Some(2),
                    "int32" => Some(4),
                    "int64" => Some(8),
                    _ => None,
                }
            };
            let field = if let Some(inner) = ty.strip_prefix("array[").and_then(|t| t.strip_suffix(']')) {
                let (elem, n) = inner.split_once(", ").unwrap_or_else(|| panic!("bad array {ty}"));
                let n: usize = n.parse().ok().or_else(|| consts.get(n).map(|v| *v as usize)).unwrap_or_else(|| panic!("bad length {n}"));
                let (s, a) = match scalar(elem) {
                    Some(s) => (s, s),
                    None => out.get(elem).map(|&(s, a, _)| (s, a)).unwrap_or_else(|| panic!("unknown element {elem}")),
                };
                (s * n, a)
            } else {
                let s = scalar(ty).unwrap_or_else(|| panic!("unknown type {ty}"));
                (s, s)
            };
            fields.push(field);
        }
    }
    out
}

#[test]
fn struct_layouts_match_the_abi() {
    let l = layouts();
    let want: &[(&str, usize, usize)] = &[
        ("dnvm_claim", size_of::<DnvmClaim>(), 2),
        ("dnvm_arbitration", size_of::<DnvmArbitration>(), 4),
        ("dnvm_info", size_of::<DnvmInfo>(), 17),
        ("dnvm_region", size_of::<DnvmRegion>(), 7),
        ("dnvm_layout", size_of::<DnvmLayout>(), 3),
        ("dnvm_stats", size_of::<DnvmStats>(), 6),
        ("hdu_info", size_of::<HduInfo>(), 9),
        ("hdu_stats", size_of::<HduStats>(), 5),
    ];
    assert_eq!(l.len(), want.len(), "structs in the description: {:?}", l.keys().collect::<Vec<_>>());
    for &(name, size, fields) in want {
        let &(s, _, f) = l.get(name).unwrap_or_else(|| panic!("struct {name} missing"));
        assert_eq!(s, size, "size of {name}");
        assert_eq!(f, fields, "fields of {name}");
    }
    // The ioctl size fields agree too (what the kernel checks).
    assert_eq!(dnvm_ioc_size(DNVM_IOC_GET_INFO), l["dnvm_info"].0);
    assert_eq!(dnvm_ioc_size(DNVM_IOC_GET_LAYOUT), l["dnvm_layout"].0);
    assert_eq!(dnvm_ioc_size(DNVM_IOC_CLAIM), l["dnvm_claim"].0);
    assert_eq!(dnvm_ioc_size(DNVM_IOC_SET_ARBITRATION), l["dnvm_arbitration"].0);
    assert_eq!(dnvm_ioc_size(DNVM_IOC_GET_STATS), l["dnvm_stats"].0);
    assert_eq!(dnvm_ioc_size(HDU_IOC_GET_INFO), l["hdu_info"].0);
    assert_eq!(dnvm_ioc_size(HDU_IOC_GET_STATS), l["hdu_stats"].0);
}
