//! Host-side types and glue generated from `wit/` (world `pflow:node/node`).

wasmtime::component::bindgen!({
    path: "../../wit",
    world: "node",
});
