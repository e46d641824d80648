//! The WebMCP door's two entries, under the loop's rules: `pageTools` lists what a step on the
//! given pathname would offer (the direct projection with its route's scope, available
//! capabilities only), and `callPageTool` runs one of them through the registry with the
//! loop's confirmation round trip. Registering them with `document.modelContext` is the
//! package's JS (`exposeWebMcp` in `index.js`).

use super::convert::{object, promise, to_js, type_error, Fields};
use super::surface::core_surface;
use super::turn::{mint_id, route_floors, JsUi};
use dpas_host_core::capability::Effect;
use dpas_host_core::project;
use dpas_host_core::registry::Surface;
use dpas_host_core::turn::call_page_tool;
use dpas_protocol::json::Value;
use dpas_protocol::PendingToolCall;
use js_sys::Array;
use wasm_bindgen::prelude::*;

/// `surface`, and the scope of `pathname` under `routeScopes`, read from `options`.
fn surface_and_scope(f: &mut Fields<'_>) -> (Option<Surface>, Vec<String>, String) {
    let surface = f.get("surface");
    let surface = f.check(core_surface(&surface));
    let pathname = f.string("pathname");
    let routes = f.get("routeScopes");
    let scope = f
        .check(route_floors(routes))
        .flatten()
        .map(|floors| floors.floor(&pathname))
        .unwrap_or_default();
    (surface, scope, pathname)
}

/// `pageTools({surface, pathname, routeScopes})`: one `PageTool` per available capability.
#[wasm_bindgen(js_name = pageTools, unchecked_return_type = "PageTool[]")]
pub fn page_tools(
    #[wasm_bindgen(unchecked_param_type = "PageToolsOptions")] options: JsValue,
) -> Result<Array, JsValue> {
    if !options.is_object() {
        return Err(type_error("pageTools needs an options object"));
    }
    let mut f = Fields::new(&options, "PageToolsOptions");
    let (surface, scope, _) = surface_and_scope(&mut f);
    f.done(())?;
    let Some(surface) = surface else {
        return Err(JsValue::UNDEFINED);
    };
    let projection = project(&surface, &scope);
    let tools = Array::new();
    for (i, descriptor) in projection.descriptors.into_iter().enumerate() {
        if !projection.state[i].available {
            continue;
        }
        let read_only = matches!(
            projection.bindings[i].effect,
            Effect::Read | Effect::ServerQuery
        );
        tools.push(&object(&[
            ("name", descriptor.wire_name.into()),
            ("canonicalId", descriptor.canonical_id.into()),
            ("description", descriptor.description.into()),
            (
                "inputSchema",
                to_js(&Value::Object(descriptor.input_schema)),
            ),
            ("readOnly", read_only.into()),
            ("confirmation", descriptor.confirmation.as_str().into()),
        ]));
    }
    Ok(tools)
}

/// `callPageTool({surface, pathname, routeScopes, name, input, confirm})`: resolves
/// `{ok, result}`, `result` being what the model would receive for the call.
#[wasm_bindgen(js_name = callPageTool, unchecked_return_type = "Promise<PageToolResult>")]
pub fn call_page_tool_export(
    #[wasm_bindgen(unchecked_param_type = "CallPageToolOptions")] options: JsValue,
) -> js_sys::Promise {
    promise(async move {
        if !options.is_object() {
            return Err(type_error("callPageTool needs an options object"));
        }
        let mut f = Fields::new(&options, "CallPageToolOptions");
        let (surface, scope, pathname) = surface_and_scope(&mut f);
        let name = f.string("name");
        let input = f.opt_json("input").unwrap_or(Value::Null);
        let confirm = f.opt_function("confirm");
        f.done(())?;
        let Some(surface) = surface else {
            return Err(JsValue::UNDEFINED);
        };
        let call = PendingToolCall {
            tool_call_id: mint_id("wmc_"),
            wire_name: name,
            canonical_id: String::new(),
            input,
        };
        let ui = JsUi {
            pathname: None,
            fallback_pathname: pathname,
            until: None,
            confirm,
            signal: None,
        };
        let done = call_page_tool(&surface, &scope, &call, &ui).await;
        Ok(object(&[
            ("ok", done.ok.into()),
            ("result", to_js(&done.value)),
        ]))
    })
}
