import { Component, useLayoutEffect, useMemo, useState, type ReactNode } from "react";
import { NavLink, Navigate, Route, Routes, useLocation, useNavigate } from "react-router";
import { useQuery, useQueryClient, type QueryClient } from "@tanstack/react-query";
import { CapabilityError } from "@dpas/host";
import { SurfaceProvider, useAgentComponent, useSurface } from "@dpas/host/react";
import { getSession, rpc, RpcError, signIn, type Role, type Session } from "./api";
import { Dock } from "./assistant/Dock";
import { McpConnect } from "./McpConnect";
import { KNOWN_ROUTES, ROUTE_LABELS, ROUTE_SCOPES, titleFor } from "./routes";
import { AllInvoices } from "./screens/AllInvoices";
import { ApprovalPage } from "./screens/ApprovalPage";
import { Architecture } from "./screens/Architecture";
import { Clients } from "./screens/Clients";
import { PendingInvoices } from "./screens/PendingInvoices";
import { committedLocation } from "./shellState";

/** The session, signing in as a controller when there is none. */
async function ensureSession(): Promise<Session> {
  const existing = await getSession();
  if (existing) return existing;
  await signIn("controller");
  const session = await getSession();
  if (!session) throw new Error("Signing in did not create a session.");
  return session;
}

/** Domain references run through the app's own /rpc call; a success reconciles (O1). */
function procedureExecutor(queryClient: QueryClient) {
  return async (path: string, input: { [key: string]: unknown }): Promise<unknown> => {
    try {
      const data = await rpc<unknown>(path, input);
      void queryClient.invalidateQueries();
      return data;
    } catch (e) {
      if (e instanceof RpcError && e.status === 404) {
        throw new CapabilityError(
          "PRECONDITION_FAILED",
          "The invoice is gone or the write is not available to you. Refresh and retry.",
          "after-refresh",
        );
      }
      if (e instanceof RpcError && e.status === 400) {
        throw new CapabilityError("INVALID_INPUT", `The server rejected the arguments: ${e.message}`, "yes", e.details);
      }
      if (e instanceof RpcError) throw new CapabilityError("EXECUTION_FAILED", e.message, "no");
      throw new CapabilityError("EXECUTION_FAILED", "The request did not reach the server.", "no", {
        reason: "transport",
        transient: true,
      });
    }
  };
}

const WEB_MCP = { routeScopes: ROUTE_SCOPES };

export function App() {
  const queryClient = useQueryClient();
  const session = useQuery({ queryKey: ["session"], queryFn: ensureSession, staleTime: Infinity });
  const executeProcedure = useMemo(() => procedureExecutor(queryClient), [queryClient]);

  if (session.error) return <Fatal error={session.error} />;
  const loading = <p className="loading">Loading…</p>;
  if (!session.data) return loading;
  // Where the browser offers WebMCP, its agent sees the same capabilities a turn would.
  return (
    <FatalBoundary>
      <SurfaceProvider executeProcedure={executeProcedure} webMcp={WEB_MCP} fallback={loading}>
        <Shell session={session.data} />
      </SurfaceProvider>
    </FatalBoundary>
  );
}

function Fatal({ error }: { error: unknown }) {
  return (
    <p role="alert" className="fatal">
      {String(error)}
    </p>
  );
}

/** Shows why the host could not start (the provider throws its initialisation failure). */
class FatalBoundary extends Component<{ children: ReactNode }, { error: unknown }> {
  state = { error: null as unknown };
  static getDerivedStateFromError(error: unknown) {
    return { error };
  }
  render() {
    return this.state.error ? <Fatal error={this.state.error} /> : this.props.children;
  }
}

function Shell({ session }: { session: Session }) {
  const surface = useSurface();
  const location = useLocation();
  const queryClient = useQueryClient();
  const [dockOpen, setDockOpen] = useState(() => window.localStorage.getItem("dpas:dock") !== "closed");
  useLayoutEffect(() => {
    committedLocation.current = location.pathname + location.search;
    surface.notifyAvailabilityChanged();
  }, [location.pathname, location.search, surface]);

  const role = session.user.role;
  const switchRole = async (next: Role) => {
    await signIn(next);
    // Another identity: every cached read (and the session itself) is stale.
    await queryClient.resetQueries();
  };
  const toggleDock = (open: boolean) => {
    window.localStorage.setItem("dpas:dock", open ? "open" : "closed");
    setDockOpen(open);
  };

  return (
    <div className={`shell ${dockOpen ? "with-dock" : ""}`}>
      <ShellCapabilities session={session} />
      <header className="topbar">
        <span className="brand">Receivables</span>
        <nav aria-label="Main">
          {KNOWN_ROUTES.map((path) => (
            <NavLink key={path} to={path}>
              {ROUTE_LABELS[path]}
            </NavLink>
          ))}
        </nav>
        <div className="identity">
          <span>
            {session.user.name} <span className="muted">({session.user.email})</span>
          </span>
          <label className="field inline">
            <span>Role</span>
            <select value={role} onChange={(e) => void switchRole(e.target.value as Role)}>
              <option value="controller">Controller</option>
              <option value="analyst">Analyst</option>
            </select>
          </label>
          <McpConnect />
          {!dockOpen && (
            <button type="button" className="primary" onClick={() => toggleDock(true)}>
              Open copilot
            </button>
          )}
        </div>
      </header>
      <main>
        <Routes>
          <Route path="/receivables/pending" element={<PendingInvoices role={role} />} />
          <Route path="/receivables/all" element={<AllInvoices />} />
          <Route path="/receivables/clients" element={<Clients />} />
          <Route path="/architecture" element={<Architecture />} />
          <Route path="/approvals/:id" element={<ApprovalPage />} />
          <Route path="*" element={<Navigate to="/receivables/pending" replace />} />
        </Routes>
      </main>
      {dockOpen && <Dock key={session.user.email} session={session} onClose={() => toggleDock(false)} />}
    </div>
  );
}

/** `view:app.navigation.*` and `view:app.session.read`, mounted while a user is known. */
function ShellCapabilities({ session }: { session: Session }) {
  const navigate = useNavigate();
  useAgentComponent({
    type: "app.navigation",
    description: "The current route and the routes the assistant can navigate to.",
    observations: [
      {
        name: "readCurrentRoute",
        description:
          "Where the user is: the path, the page title and every reachable route. Call it first whenever what is on screen matters.",
        outputSchema: {
          type: "object",
          properties: {
            path: { type: "string" },
            title: { type: "string" },
            knownRoutes: { type: "array", items: { type: "string" } },
          },
          required: ["path", "title", "knownRoutes"],
        },
        read: () => ({
          path: window.location.pathname,
          title: titleFor(window.location.pathname),
          knownRoutes: [...KNOWN_ROUTES],
        }),
      },
    ],
    actions: [
      {
        name: "goTo",
        description:
          "Navigate to one of the known routes, when the user asks for a page or a needed capability lives on another screen.",
        effect: "navigation",
        idempotent: true,
        inputSchema: {
          type: "object",
          properties: {
            path: { type: "string", description: "An absolute route, e.g. /receivables/pending" },
          },
          required: ["path"],
          additionalProperties: false,
        },
        execute: (input) => {
          const path = String(input.path);
          if (!KNOWN_ROUTES.includes(path)) {
            throw new CapabilityError("PRECONDITION_FAILED", `"${path}" is not a route in this app.`, "with-changes", {
              knownRoutes: [...KNOWN_ROUTES],
            });
          }
          navigate(path);
        },
      },
    ],
  });
  useAgentComponent({
    type: "app.session",
    description: "The acting identity.",
    observations: [
      {
        name: "read",
        description: "Who is signed in and with which role: controllers can write, analysts can only read.",
        outputSchema: {
          type: "object",
          properties: { email: { type: "string" }, name: { type: "string" }, role: { type: "string" } },
          required: ["email", "name", "role"],
        },
        read: () => {
          const { email, name, role } = session.user;
          return { email, name, role };
        },
      },
    ],
  });
  return null;
}

