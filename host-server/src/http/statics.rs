//! The fallback route: the built web app (with SPA fallback to `index.html`) when `--static`
//! is given, and a JSON 404 for API paths and everything else.

use std::path::{Path, PathBuf};

use actix_files::NamedFile;
use actix_web::http::header::{HeaderValue, CACHE_CONTROL};
use actix_web::http::Method;
use actix_web::{web, HttpRequest, HttpResponse};

use super::error::ApiError;
use crate::app::AppState;

fn content_type(path: &Path) -> &'static str {
    match path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or_default()
    {
        "html" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "json" | "map" => "application/json",
        "wasm" => "application/wasm",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "ico" => "image/x-icon",
        "webp" => "image/webp",
        "woff2" => "font/woff2",
        "woff" => "font/woff",
        "txt" => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

/// Maps a URL path to a file under `root`, refusing anything that could climb out of it.
fn resolve(root: &Path, url_path: &str) -> Option<PathBuf> {
    let mut out = root.to_path_buf();
    for segment in url_path.split('/').filter(|s| !s.is_empty()) {
        if segment.starts_with('.')
            || segment.contains('\\')
            || segment.contains('\0')
            || segment.contains('%')
        {
            return None;
        }
        out.push(segment);
    }
    Some(out)
}

/// Serves one file through `actix-files`, which answers conditional requests (`ETag`,
/// `Last-Modified`, 304) and byte ranges (206); the type comes from our own table so that text
/// always says its charset.
async fn file(req: &HttpRequest, path: &Path, cache: bool) -> Option<HttpResponse> {
    let named = NamedFile::open_async(path).await.ok()?;
    let mime = content_type(path).parse().ok()?;
    let mut resp = named
        .set_content_type(mime)
        .disable_content_disposition()
        .into_response(req);
    resp.headers_mut().insert(
        CACHE_CONTROL,
        HeaderValue::from_static(if cache {
            "public, max-age=3600"
        } else {
            "no-cache"
        }),
    );
    Some(resp)
}

pub(crate) async fn fallback(
    req: HttpRequest,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let path = req.path();
    let api = super::harden::is_api_path(path);
    let Some(root) = state.config.static_dir.as_deref() else {
        return Err(ApiError::NotFound);
    };
    if api || !(req.method() == Method::GET || req.method() == Method::HEAD) {
        return Err(ApiError::NotFound);
    }
    if let Some(target) = resolve(root, path) {
        if tokio::fs::metadata(&target)
            .await
            .is_ok_and(|m| m.is_file())
        {
            if let Some(resp) = file(&req, &target, path.starts_with("/assets/")).await {
                return Ok(resp);
            }
        }
    }
    // Client-side routes (no file extension) get the app shell.
    let last = path.rsplit('/').next().unwrap_or_default();
    if !last.contains('.') {
        if let Some(resp) = file(&req, &root.join("index.html"), false).await {
            return Ok(resp);
        }
    }
    Err(ApiError::NotFound)
}
