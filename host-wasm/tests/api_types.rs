//! `src/web/types.d.ts` (emitted into the package's `.d.ts`) is API.md's TypeScript block
//! without the declarations wasm-bindgen generates itself (the classes and `runTurn`).

#[test]
fn the_emitted_types_are_api_md_s() {
    let api = include_str!("../API.md");
    let start = api.find("```ts\n").expect("a ts block") + "```ts\n".len();
    // The block's own end: API.md has further blocks after it (the JS-written exports).
    let end = start + api[start..].find("\n```").expect("its end") + 1;
    let mut kept = Vec::new();
    let mut in_generated = false;
    for line in api[start..end].lines() {
        if line.starts_with("export class ")
            || line.starts_with("export interface RegistrationHandle")
        {
            in_generated = true;
        }
        if !in_generated && !line.starts_with("export function runTurn") {
            kept.push(line);
        }
        if in_generated && line.starts_with('}') {
            in_generated = false;
        }
    }
    let expected = kept.join("\n").trim().to_owned() + "\n";
    assert_eq!(include_str!("../src/web/types.d.ts"), expected);
}
