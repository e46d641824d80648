/work/wt-async/target-v0/wasm32-unknown-unknown/release/deps/dpas_protocol-17d75417430d9778.d: protocol/src/lib.rs protocol/src/catalog.rs protocol/src/error.rs protocol/src/frame.rs protocol/src/json/mod.rs protocol/src/json/parse.rs protocol/src/json/write.rs protocol/src/limits.rs protocol/src/message.rs protocol/src/ndjson.rs protocol/src/request.rs protocol/src/scope.rs protocol/src/tool.rs protocol/src/usage.rs protocol/src/vocab.rs protocol/src/wire_name.rs

/work/wt-async/target-v0/wasm32-unknown-unknown/release/deps/libdpas_protocol-17d75417430d9778.rlib: protocol/src/lib.rs protocol/src/catalog.rs protocol/src/error.rs protocol/src/frame.rs protocol/src/json/mod.rs protocol/src/json/parse.rs protocol/src/json/write.rs protocol/src/limits.rs protocol/src/message.rs protocol/src/ndjson.rs protocol/src/request.rs protocol/src/scope.rs protocol/src/tool.rs protocol/src/usage.rs protocol/src/vocab.rs protocol/src/wire_name.rs

/work/wt-async/target-v0/wasm32-unknown-unknown/release/deps/libdpas_protocol-17d75417430d9778.rmeta: protocol/src/lib.rs protocol/src/catalog.rs protocol/src/error.rs protocol/src/frame.rs protocol/src/json/mod.rs protocol/src/json/parse.rs protocol/src/json/write.rs protocol/src/limits.rs protocol/src/message.rs protocol/src/ndjson.rs protocol/src/request.rs protocol/src/scope.rs protocol/src/tool.rs protocol/src/usage.rs protocol/src/vocab.rs protocol/src/wire_name.rs

protocol/src/lib.rs:
protocol/src/catalog.rs:
protocol/src/error.rs:
protocol/src/frame.rs:
protocol/src/json/mod.rs:
protocol/src/json/parse.rs:
protocol/src/json/write.rs:
protocol/src/limits.rs:
protocol/src/message.rs:
protocol/src/ndjson.rs:
protocol/src/request.rs:
protocol/src/scope.rs:
protocol/src/tool.rs:
protocol/src/usage.rs:
protocol/src/vocab.rs:
protocol/src/wire_name.rs:
