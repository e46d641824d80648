//! An application of your own on `host-server`, used as a library: a shared todo list kept in
//! SQLite, four governed capabilities, a policy that makes the assistant ask before it deletes,
//! a sign-in, and the chat endpoint with this app's prompt and route scopes.
//!
//! `main.rs` is the binary; the tests drive the same pieces in process.

use std::sync::Arc;

use actix_web::http::header::SET_COOKIE;
use actix_web::{web, HttpRequest, HttpResponse};
use dpas_governance::{
    policy_fn, CallSurface, Capability, Decision, HandlerError, Policy, PolicyPhase, RegistryError,
    Risk, RuntimeBuilder, SideEffect,
};
use dpas_protocol::RouteFloors;
use dpas_store::Db;
use host_server::app::StartupError;
use host_server::doors::{self, ChatConfig};
use host_server::http::{read_json, ApiError};
use host_server::{Actor, AppBuilder, AppState, ServerConfig};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use sqlx::Row;

/// The first part of the system prompt; the host's own rules about tools follow it.
pub const APP_PROMPT: &str = "\
You are the assistant of a small team's shared todo list. Each todo has an id, a text and \
whether it is done. Deleting a todo needs the user's approval.";

/// Todos a list may hold; adding past it is refused.
pub const MAX_TODOS: i64 = 500;

/// The scope each page's step offers: the one page (`/`) offers the capabilities tagged `todos`.
pub fn route_floors() -> RouteFloors {
    RouteFloors::new("app", [("/", vec!["todos"])])
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Todo {
    pub id: i64,
    pub text: String,
    pub done: bool,
}

/// The todo list in the server's database (SQLite here) (the table sits beside the host's own).
#[derive(Debug, Clone)]
pub struct Todos {
    pool: Db,
}

fn todo_of(row: &sqlx::any::AnyRow) -> Todo {
    Todo {
        id: row.get("id"),
        text: row.get("text"),
        done: row.get::<i64, _>("done") != 0,
    }
}

impl Todos {
    pub fn new(pool: Db) -> Self {
        Self { pool }
    }

    /// Creates the table when it is missing.
    pub async fn prepare(&self) -> Result<(), sqlx::Error> {
        sqlx::query(
            "CREATE TABLE IF NOT EXISTS todos (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                text TEXT NOT NULL,
                done INTEGER NOT NULL DEFAULT 0,
                added_by TEXT NOT NULL
            )",
        )
        .execute(&*self.pool)
        .await?;
        Ok(())
    }

    pub async fn list(&self) -> Result<Vec<Todo>, sqlx::Error> {
        let rows = sqlx::query("SELECT id, text, done FROM todos ORDER BY id")
            .fetch_all(&*self.pool)
            .await?;
        Ok(rows.iter().map(todo_of).collect())
    }

    /// The row `sql` (one `$1` for the id, `RETURNING`/`SELECT id, text, done`) gives, if any.
    async fn one(&self, sql: &str, id: i64) -> Result<Option<Todo>, sqlx::Error> {
        let row = sqlx::query(sql)
            .bind(id)
            .fetch_optional(&*self.pool)
            .await?;
        Ok(row.as_ref().map(todo_of))
    }

    pub async fn get(&self, id: i64) -> Result<Option<Todo>, sqlx::Error> {
        self.one("SELECT id, text, done FROM todos WHERE id = $1", id)
            .await
    }

    /// Adds a todo unless the list is full (`None` then), in one statement.
    pub async fn add(&self, text: &str, by: &str) -> Result<Option<Todo>, sqlx::Error> {
        let row = sqlx::query(
            "INSERT INTO todos (text, added_by) SELECT $1, $2 WHERE (SELECT COUNT(*) FROM todos) < $3
             RETURNING id, text, done",
        )
        .bind(text)
        .bind(by)
        .bind(MAX_TODOS)
        .fetch_optional(&*self.pool)
        .await?;
        Ok(row.as_ref().map(todo_of))
    }

    pub async fn complete(&self, id: i64) -> Result<Option<Todo>, sqlx::Error> {
        self.one(
            "UPDATE todos SET done = 1 WHERE id = $1 RETURNING id, text, done",
            id,
        )
        .await
    }

    pub async fn delete(&self, id: i64) -> Result<Option<Todo>, sqlx::Error> {
        self.one(
            "DELETE FROM todos WHERE id = $1 RETURNING id, text, done",
            id,
        )
        .await
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[schemars(extend("properties" = {}))]
pub struct NoInput {}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct AddTodoInput {
    /// What to do, in a few words.
    #[schemars(length(min = 1, max = 200))]
    pub text: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct TodoIdInput {
    /// The todo's id, as `list-todos` returns it.
    #[schemars(range(min = 1, max = 9007199254740991_i64))]
    pub id: i64,
}

fn missing(id: i64) -> HandlerError {
    HandlerError::Rejected(format!("There is no todo {id}."))
}

const SURFACES: &[CallSurface] = &[CallSurface::Model, CallSurface::Mcp, CallSurface::Direct];

/// The four capabilities, in the order the model sees them.
pub fn capabilities(todos: &Todos) -> Vec<Result<Capability, RegistryError>> {
    let t = todos.clone();
    let list = Capability::builder("list-todos")
        .description("Returns every todo with its id, text and whether it is done.")
        .side_effect(SideEffect::Read)
        .tags(["todos"])
        .expose(SURFACES)
        .handler(move |_ctx, _i: NoInput| {
            let t = t.clone();
            async move { t.list().await.map_err(HandlerError::internal) }
        });
    let t = todos.clone();
    let add = Capability::builder("add-todo")
        .description("Adds a todo to the end of the list and returns it.")
        .side_effect(SideEffect::Write)
        .tags(["todos"])
        .expose(SURFACES)
        .handler(move |ctx, i: AddTodoInput| {
            let t = t.clone();
            async move {
                let text = i.text.trim();
                if text.is_empty() {
                    return Err(HandlerError::Rejected("A todo needs some text.".to_owned()));
                }
                t.add(text, &ctx.actor.id)
                    .await
                    .map_err(HandlerError::internal)?
                    .ok_or_else(|| {
                        HandlerError::Rejected(format!("The list is full ({MAX_TODOS} todos)."))
                    })
            }
        });
    let t = todos.clone();
    // Not offered to the chat by the server: the app's screen offers it as a procedure the
    // user confirms in the browser (examples/react-todo), and runs it over `/rpc`.
    let complete = Capability::builder("complete-todo")
        .description("Marks a todo as done.")
        .side_effect(SideEffect::Write)
        .tags(["todos"])
        .expose(&[CallSurface::Mcp, CallSurface::Direct])
        .handler(move |_ctx, i: TodoIdInput| {
            let t = t.clone();
            async move {
                let done = t.complete(i.id).await.map_err(HandlerError::internal)?;
                done.ok_or_else(|| missing(i.id))
            }
        });
    let t = todos.clone();
    let target = todos.clone();
    let delete = Capability::builder("delete-todo")
        .description("Deletes a todo for good.")
        .side_effect(SideEffect::Destructive)
        .risk(Risk::Medium)
        .tags(["todos"])
        .expose(SURFACES)
        // An approval binds the todo as it was shown; a changed todo makes it stale.
        .target_state(move |input| {
            let target = target.clone();
            async move {
                let id = input.get("id").and_then(serde_json::Value::as_i64);
                let todo = match id {
                    Some(id) => target.get(id).await.map_err(HandlerError::internal)?,
                    None => None,
                };
                Ok(json!(todo))
            }
        })
        .handler(move |_ctx, i: TodoIdInput| {
            let t = t.clone();
            async move {
                let gone = t.delete(i.id).await.map_err(HandlerError::internal)?;
                gone.ok_or_else(|| missing(i.id))
            }
        });
    vec![list, add, complete, delete]
}

/// `ask-before-deleting`: a destructive call a model chose (chat, MCP) waits for the user's
/// approval; the app's own buttons (`/rpc`, surface `direct`) are the user acting themselves.
pub fn ask_before_deleting() -> Arc<dyn Policy> {
    policy_fn("ask-before-deleting", &[PolicyPhase::Invocation], |req| {
        Ok(
            if req.surface.is_model() && req.capability.side_effect == SideEffect::Destructive {
                Decision::RequireApproval {
                    reason: "the assistant asked to delete a todo".to_owned(),
                    approval_type: "human-confirmation".to_owned(),
                    expires_in: None,
                }
            } else {
                Decision::Allow
            },
        )
    })
}

/// Registers the todo capabilities and the policy.
pub fn register(builder: RuntimeBuilder, todos: &Todos) -> RuntimeBuilder {
    capabilities(todos)
        .into_iter()
        .fold(builder, RuntimeBuilder::capability)
        .policy(ask_before_deleting())
}

#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error(transparent)]
    Startup(#[from] StartupError),
    #[error("preparing the todo table: {0}")]
    Table(#[from] sqlx::Error),
    #[error(transparent)]
    Model(#[from] doors::ModelSetupError),
}

/// The host with the todo domain instead of the demo's, and the chat endpoint's configuration.
pub async fn build(config: ServerConfig) -> Result<(AppState, ChatConfig), SetupError> {
    let chat = doors::for_app(&config, route_floors(), APP_PROMPT)?;
    let state = AppBuilder::new(config)
        .register(|rt, pool| register(rt, &Todos::new(pool.clone())))
        .build()
        .await?;
    Todos::new(state.pool.clone()).prepare().await?;
    Ok((state, chat))
}

/// The sign-in body: `{"name": "Sam"}`. Nobody signed in gets more than this parsed.
const SIGN_IN_BODY_LIMIT: usize = 1024;

#[derive(Deserialize)]
struct SignIn {
    name: serde_json::Value,
}

/// `POST /api/sign-in {"name"}`: signs in by name and sets the host's session cookie.
///
/// A stand-in for your own identity provider: anyone who can reach the server may sign in
/// under any name. Keep the example on loopback, or replace this route.
async fn sign_in(
    req: HttpRequest,
    state: web::Data<AppState>,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    state.sign_in.admit(req.peer_addr().map(|a| a.ip()))?;
    let body: SignIn = read_json(&req, payload, SIGN_IN_BODY_LIMIT).await?;
    let name = body.name.as_str().map(str::trim).unwrap_or_default();
    if name.is_empty() || name.chars().count() > 40 || name.chars().any(char::is_control) {
        return Err(ApiError::BadRequest(
            "A name of 1 to 40 characters is needed.".to_owned(),
        ));
    }
    let actor = Actor::user(name, name, "member");
    let cookie = state.sessions.set_cookie(&actor);
    Ok(HttpResponse::Ok()
        .insert_header((SET_COOKIE, cookie.encoded().to_string()))
        .json(json!({"user": {"email": actor.id, "name": actor.display_name, "role": actor.role}})))
}

/// The routes this app adds to the host's: the sign-in and the chat doors.
pub fn routes(chat: ChatConfig) -> impl Fn(&mut web::ServiceConfig) + Clone + Send + 'static {
    let doors = doors::mount(chat);
    move |cfg: &mut web::ServiceConfig| {
        cfg.service(web::resource("/api/sign-in").route(web::post().to(sign_in)));
        doors(cfg);
    }
}
