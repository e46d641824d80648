// The assistant dock: @dpas/host/assistant-ui's runtime over the conversation, with the demo's
// own thread layout, markdown and cards.
import { useCallback, useEffect, useMemo, useState } from "react";
import { AssistantRuntimeProvider, ComposerPrimitive, MessagePrimitive, ThreadPrimitive } from "@assistant-ui/react";
import { MarkdownTextPrimitive } from "@assistant-ui/react-markdown";
import remarkGfm from "remark-gfm";
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { useApprovals, useConversation, usePendingConfirmations } from "@dpas/host/react";
import { useDpasRuntime } from "@dpas/host/assistant-ui";
import { listThreads, type Session } from "../api";
import { ROUTE_SCOPES } from "../routes";
import { committedLocation } from "../shellState";
import { Inspector } from "./Inspector";
import { TokenMeter } from "./TokenMeter";
import { DockContext, ToolCard } from "./ToolCard";

export const SUGGESTION = { label: "What's overdue?", prompt: "Which invoices are overdue, and by how much?" };

interface DockProps {
  session: Session;
  onClose: () => void;
}

export function Dock({ session, onClose }: DockProps) {
  const queryClient = useQueryClient();
  const [mode, setMode] = useState<"direct" | "meta">("direct");
  const [model, setModel] = useState(session.defaultModel ?? session.models[0] ?? "");
  // The conversation store lives while the dock is mounted, and the thread on screen comes
  // back after a reload; confirmations go to <ConfirmDialog>.
  const chat = useConversation({
    endpoint: "/agent/chat",
    threadsEndpoint: "/api/threads",
    getPathname: () => window.location.pathname,
    routeScopes: ROUTE_SCOPES,
    until: () => committedLocation.current === window.location.pathname + window.location.search,
    modelId: model || undefined,
    catalogMode: mode,
    onEvent: (event) => {
      if (event.type === "reconcile") void queryClient.invalidateQueries();
    },
    storageKey: `dpas:thread ${session.user.email}`,
  });
  const { conversation, state, restoring: reopening } = chat;
  // The thread's pending approvals, for the tool cards.
  const approvals = useApprovals(conversation);

  const [restoring, setRestoring] = useState(false);
  const [showThreads, setShowThreads] = useState(false);
  const [showInspector, setShowInspector] = useState(false);
  const threads = useQuery({ queryKey: ["threads", session.user.email], queryFn: listThreads });

  const restore = useCallback(
    async (id: string) => {
      setRestoring(true);
      try {
        await conversation.restore(id);
      } finally {
        setRestoring(false);
      }
    },
    [conversation],
  );

  // The thread list changes when a turn ends.
  useEffect(() => {
    if (!state.isRunning) void queryClient.invalidateQueries({ queryKey: ["threads"] });
  }, [state.isRunning, queryClient]);

  const runtime = useDpasRuntime(chat);

  const scripted = session.models.length === 0 || session.models.every((m) => m.startsWith("scripted"));

  return (
    <aside className="dock" role="region" aria-label="Copilot" aria-busy={state.isRunning} data-tab-role={state.tabRole}>
      <DockContext.Provider value={approvals}>
      <AssistantRuntimeProvider runtime={runtime}>
        <header className="dock-head">
          <div className="dock-controls">
            <strong>Assistant</strong>
            {scripted && (
              <span className="badge" title="No OPENAI_API_KEY or ANTHROPIC_API_KEY on the server: the scripted demo model answers.">
                scripted model, no API key
              </span>
            )}
            <button type="button" className="dock-close" aria-label="Hide copilot" onClick={onClose}>
              Hide
            </button>
          </div>
          <div className="dock-controls">
            <label className="field inline">
              <span>Model</span>
              <select
                value={model}
                onChange={(e) => setModel(e.target.value)}
              >
                {session.models.map((m) => (
                  <option key={m} value={m}>
                    {m}
                  </option>
                ))}
              </select>
            </label>
            <label className="field inline">
              <span>Catalog</span>
              <select
                aria-label="Catalog mode"
                value={mode}
                onChange={(e) => setMode(e.target.value === "meta" ? "meta" : "direct")}
              >
                <option value="direct">Direct</option>
                <option value="meta">Meta (surface_* tools)</option>
              </select>
            </label>
          </div>
          <div className="dock-controls">
            <button
              type="button"
              disabled={state.isRunning}
              onClick={() => conversation.reset()}
            >
              New thread
            </button>
            <button type="button" aria-expanded={showThreads} onClick={() => setShowThreads((v) => !v)}>
              Recent threads
            </button>
            <button type="button" aria-pressed={showInspector} onClick={() => setShowInspector((v) => !v)}>
              Inspector
            </button>
          </div>
          {showThreads && (
            <ul className="thread-list" aria-label="Recent threads">
              {(threads.data ?? []).length === 0 && <li className="muted">No saved threads yet.</li>}
              {(threads.data ?? []).map((t) => (
                <li key={t.id}>
                  <button
                    type="button"
                    disabled={state.isRunning}
                    aria-current={t.id === state.conversationId || undefined}
                    onClick={() => {
                      setShowThreads(false);
                      void restore(t.id);
                    }}
                  >
                    <span className="thread-title">{t.title || "Untitled thread"}</span>
                    <span className="muted">{new Date(t.updatedAt).toLocaleString()}</span>
                  </button>
                </li>
              ))}
            </ul>
          )}
          <TokenMeter turn={state.turnUsage} conversation={state.conversationUsage} />
        </header>

        <ThreadPrimitive.Root className="thread">
          <ThreadPrimitive.Viewport className="thread-viewport">
            <ThreadPrimitive.Empty>
              <div className="empty-state">
                <p className="big">How can I help?</p>
                <p className="muted">
                  I can read this ledger, operate the screen you are on, and ask before anything irreversible.
                </p>
                {scripted && (
                  <p className="notice" role="note">
                    No model API key is configured, so this demo runs on the scripted model: it plays one
                    scenario (what is overdue) whatever you type.
                  </p>
                )}
                <ThreadPrimitive.Suggestion prompt={SUGGESTION.prompt} send className="chip">
                  {SUGGESTION.label}
                </ThreadPrimitive.Suggestion>
              </div>
            </ThreadPrimitive.Empty>
            <ThreadPrimitive.Messages components={{ UserMessage, AssistantMessage }} />
            {(restoring || reopening) && <p className="muted">Restoring the thread…</p>}
            {state.error && (
              <p role="alert" className="error">
                {state.error.code}: {state.error.message}
              </p>
            )}
          </ThreadPrimitive.Viewport>
          <ComposerPrimitive.Root className="composer">
            <ComposerPrimitive.Input aria-label="Message" placeholder="Ask about your receivables…" rows={1} />
            <ThreadPrimitive.If running={false}>
              <ComposerPrimitive.Send aria-label="Send">Send</ComposerPrimitive.Send>
            </ThreadPrimitive.If>
            <ThreadPrimitive.If running>
              <ComposerPrimitive.Cancel aria-label="Stop">Stop</ComposerPrimitive.Cancel>
            </ThreadPrimitive.If>
          </ComposerPrimitive.Root>
        </ThreadPrimitive.Root>
      </AssistantRuntimeProvider>
      </DockContext.Provider>
      {showInspector && <Inspector events={state.inspector} />}
      <ConfirmDialog />
    </aside>
  );
}

const PlainText = ({ text }: { text: string }) => <p className="user-text">{text}</p>;
const USER_PARTS = { Text: PlainText };

function UserMessage() {
  return (
    <MessagePrimitive.Root className="msg user">
      <MessagePrimitive.Parts components={USER_PARTS} />
    </MessagePrimitive.Root>
  );
}

const MarkdownText = () => <MarkdownTextPrimitive remarkPlugins={[remarkGfm]} className="markdown" />;

function Reasoning({ text }: { text: string }) {
  return (
    <details className="reasoning">
      <summary>Thought</summary>
      <p>{text}</p>
    </details>
  );
}

function AssistantMessage() {
  const components = useMemo(
    () => ({ Text: MarkdownText, Reasoning, tools: { Override: ToolCard } }),
    [],
  );
  return (
    <MessagePrimitive.Root className="msg assistant">
      <MessagePrimitive.Parts components={components} />
    </MessagePrimitive.Root>
  );
}

/** The first pending confirmation, if any. Always mounted with the dock: while it is, requests
 *  wait for the user; unmounting it denies them. */
function ConfirmDialog() {
  const pending = usePendingConfirmations();
  const request = pending[0];
  // Dismissing the dialog (Escape) is a denial.
  useEffect(() => {
    if (!request) return;
    const onKey = (e: KeyboardEvent) => {
      if (e.key === "Escape") {
        e.preventDefault();
        request.deny();
      }
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [request]);
  if (!request) return null;
  return (
    <div className="dialog-backdrop">
      <div role="alertdialog" aria-modal="true" aria-labelledby="confirm-title" className="dialog">
        <h2 id="confirm-title">Allow this action?</h2>
        <p>
          The assistant wants to run <code>{request.canonicalId}</code>
          {request.effect ? ` (${request.effect})` : ""}.
        </p>
        <p>{request.description}</p>
        <pre className="json">{JSON.stringify(request.input, null, 2)}</pre>
        <div className="dialog-actions">
          <button type="button" onClick={() => request.deny()}>
            Deny
          </button>
          <button type="button" className="primary" onClick={() => request.approve()}>
            Allow
          </button>
        </div>
      </div>
    </div>
  );
}
