// @dpas/host/assistant-ui: assistant-ui's external-store runtime over the package's
// Conversation, a tool card, an approval card and a ready thread. Plain JS (no build step); the
// types are in assistant-ui.d.ts. @assistant-ui/react and react are the app's (optional peers).
import { createElement as h, Fragment, useEffect, useMemo, useRef, useState } from "react";
import { toolCallPhase } from "@dpas/host";
import { useApprovals } from "@dpas/host/react";
import {
  AuiIf,
  ComposerPrimitive,
  MessagePrimitive,
  ThreadPrimitive,
  useAuiState,
  useExternalStoreRuntime,
} from "@assistant-ui/react";

// The runtime's extras: what the cards need from the conversation, under a key of our own.
const KEY = Symbol.for("@dpas/host/assistant-ui");
const NO_DPAS = { approvals: null, onApprovalDecided: () => {}, error: undefined };

function useDpas() {
  const extras = useAuiState((s) => s.thread.extras);
  return (extras && typeof extras === "object" && extras[KEY]) || NO_DPAS;
}

function asArgs(input) {
  return input && typeof input === "object" && !Array.isArray(input) ? input : {};
}

function toolCallPart(call) {
  const part = {
    type: "tool-call",
    toolCallId: call.toolCallId,
    toolName: call.canonicalId,
    args: asArgs(call.input),
    argsText: JSON.stringify(call.input ?? {}),
    artifact: { canonicalId: call.canonicalId, wireName: call.wireName, executor: call.executor, state: call.state },
  };
  if (call.state !== "running") {
    part.result = call.result ?? null;
    part.isError = call.state === "error";
  }
  return part;
}

/** A ChatMessageView as assistant-ui's ThreadMessageLike: the parts in the order the model
 *  produced them (a text said after a tool call shows below its card). */
export function toThreadMessage(message, index, running) {
  const id = message.id || `m${index}`;
  if (message.role === "user") return { id, role: "user", content: message.text };
  const content = [];
  for (const part of message.parts) {
    if (part.type === "tool-call") content.push(toolCallPart(part));
    else if (part.text.trim()) content.push({ type: part.type, text: part.text });
  }
  return {
    id,
    role: "assistant",
    content,
    status: running ? { type: "running" } : { type: "complete", reason: "stop" },
  };
}

function textOf(message) {
  let text = "";
  for (const part of message.content) if (part.type === "text") text += part.text;
  return text.trim();
}

/** assistant-ui's runtime for the conversation of `useConversation()` (`{ state, conversation }`):
 *  messages converted in model order, `onNew` sends the text, `onCancel` cancels the turn; the
 *  conversation's approvals (useApprovals) reach the approval cards through the extras. */
export function useDpasRuntime({ state, conversation }, options = {}) {
  const latest = useRef(options);
  useEffect(() => {
    latest.current = options;
  });
  const { approvals, loaded, error: listError, approve, deny, decision, isDeciding } = useApprovals(conversation, {
    endpoint: options.approvalsEndpoint,
  });
  const error = state.error;
  const extras = useMemo(
    () => ({
      [KEY]: {
        approvals: { approvals, loaded, error: listError, approve, deny, decision, isDeciding },
        onApprovalDecided: (made) => latest.current.onApprovalDecided?.(made),
        error,
      },
    }),
    [approvals, loaded, listError, approve, deny, decision, isDeciding, error],
  );
  const messages = state.messages;
  const running = state.isRunning;
  return useExternalStoreRuntime({
    messages,
    isRunning: running,
    convertMessage: (message, index) => toThreadMessage(message, index, running && index === messages.length - 1),
    onNew: async (message) => {
      const text = textOf(message);
      if (text) await conversation.send(text);
    },
    onCancel: async () => conversation.cancel(),
    extras,
  });
}

function json(value) {
  return h("pre", { className: "dpas-json" }, JSON.stringify(value ?? null, null, 2));
}

const STATE_TEXT = {
  running: "running…",
  done: "done",
  error: "failed",
  "awaiting-approval": "awaiting approval",
  decided: "approval decided",
};

/** A tool call: its capability id, where it runs, its state, and its input and result behind
 *  "Details"; a server call waiting for an approval (or decided) shows the approval card. */
export function DpasToolCard(props) {
  const { approvals } = useDpas();
  const artifact = props.artifact ?? {};
  const canonicalId = artifact.canonicalId ?? props.toolName;
  const state = artifact.state ?? (props.result === undefined ? "running" : props.isError ? "error" : "done");
  const call = {
    toolCallId: props.toolCallId,
    wireName: artifact.wireName ?? props.toolName,
    canonicalId,
    executor: artifact.executor ?? "server",
    input: props.args,
    state,
    result: props.result,
  };
  const phase = toolCallPhase(call, approvals ? { approvals } : undefined);
  const approval = phase.phase === "awaiting-approval" || phase.phase === "decided" ? phase : null;
  const shown = approval ? approval.phase : state;
  // Whether the server's list of pending approvals has it yet (it may lag the step's answer).
  const listed = approval?.phase === "awaiting-approval" ? (approval.card ? "listed" : "asked") : undefined;
  return h(
    "div",
    {
      className: `dpas-tool-card dpas-state-${shown}`,
      "data-tool-card": canonicalId,
      "data-state": shown,
      "data-approval": listed,
    },
    h(
      "div",
      { className: "dpas-tool-head" },
      h("code", null, canonicalId),
      " ",
      h("span", { className: "dpas-tool-state" }, STATE_TEXT[shown] ?? shown),
    ),
    h(
      "details",
      { className: "dpas-tool-details" },
      h("summary", null, "Details"),
      h("div", null, call.executor === "browser" ? "Ran in this browser. Input:" : "Ran on the server. Input:"),
      json(props.args),
      props.result !== undefined && h(Fragment, null, h("div", null, "Result:"), json(props.result)),
    ),
    approval && h(DpasApprovalCard, { phase: approval, canonicalId, input: props.args }),
  );
}

/** A server approval, from `toolCallPhase`: while it waits, Deny and Approve (useApprovals:
 *  `POST /api/approvals/:id`, then the thread reloads with the receipt the server appended);
 *  decided here, the server's receipt; decided elsewhere (another tab, before a reload), that
 *  it was decided. */
export function DpasApprovalCard({ phase, canonicalId, input }) {
  const { approvals, onApprovalDecided } = useDpas();
  const [error, setError] = useState(null);
  const id = phase.approvalId;
  const decide = (approved) => {
    setError(null);
    (approved ? approvals.approve : approvals.deny)(id).then(onApprovalDecided, (e) =>
      setError(e?.code ? `${e.code}: ${e.message}` : String(e?.message ?? e)),
    );
  };
  const receipt = phase.phase === "decided" ? phase.decision?.receipt : undefined;
  const busy = !approvals || approvals.isDeciding(id);
  return h(
    "div",
    { className: "dpas-approval-card", role: "group", "aria-label": "Approval required" },
    h(
      "p",
      null,
      h("strong", null, "Approval required."),
      " ",
      (phase.phase === "awaiting-approval" && phase.message) || `The assistant asked to run ${canonicalId}.`,
    ),
    json(input),
    phase.phase === "awaiting-approval"
      ? h(
          "div",
          { className: "dpas-approval-actions" },
          h("button", { type: "button", disabled: busy, onClick: () => decide(false) }, "Deny"),
          h("button", { type: "button", disabled: busy, onClick: () => decide(true) }, "Approve"),
        )
      : h(
          "p",
          { className: receipt ? (receipt.ok ? "dpas-receipt dpas-ok" : "dpas-receipt dpas-failed") : "dpas-receipt", role: "status" },
          receipt ? receipt.text : "This approval has been decided.",
        ),
    error && h("p", { role: "alert" }, error),
  );
}

function PlainText({ text }) {
  return h("p", { className: "dpas-text", style: { whiteSpace: "pre-wrap" } }, text);
}

function Reasoning({ text }) {
  return h("details", { className: "dpas-reasoning" }, h("summary", null, "Reasoning"), h("p", null, text));
}

function UserMessage() {
  return h(
    MessagePrimitive.Root,
    { className: "dpas-message dpas-user", "data-role": "user" },
    h(MessagePrimitive.Parts, { components: USER_PARTS }),
  );
}
const USER_PARTS = { Text: PlainText };

function AssistantMessage({ parts }) {
  return h(
    MessagePrimitive.Root,
    { className: "dpas-message dpas-assistant", "data-role": "assistant" },
    h(MessagePrimitive.Parts, { components: parts }),
  );
}

function TurnError() {
  const { error } = useDpas();
  return error ? h("p", { role: "alert", className: "dpas-error" }, `${error.code}: ${error.message}`) : null;
}

const isEmpty = (s) => s.thread.isEmpty;
const isRunning = (s) => s.thread.isRunning;
const isIdle = (s) => !s.thread.isRunning;

/** A whole chat on assistant-ui's primitives: the messages (text, reasoning and tool cards in
 *  model order), the turn's error, and a composer with Send and Stop. Unstyled: every element
 *  has a `dpas-*` class. */
export function DpasThread({ welcome = null, placeholder = "Message", components = {}, className }) {
  const { Text = PlainText, Reasoning: ReasoningPart = Reasoning, ToolFallback = DpasToolCard } = components;
  const parts = useMemo(
    () => ({ Text, Reasoning: ReasoningPart, tools: { Fallback: ToolFallback } }),
    [Text, ReasoningPart, ToolFallback],
  );
  return h(
    ThreadPrimitive.Root,
    { className: className ? `dpas-thread ${className}` : "dpas-thread" },
    h(
      ThreadPrimitive.Viewport,
      { className: "dpas-viewport" },
      welcome && h(AuiIf, { condition: isEmpty }, welcome),
      h(ThreadPrimitive.Messages, null, ({ message }) =>
        message.role === "user" ? h(UserMessage) : h(AssistantMessage, { parts }),
      ),
      h(TurnError),
    ),
    h(
      ComposerPrimitive.Root,
      { className: "dpas-composer" },
      h(ComposerPrimitive.Input, { "aria-label": "Message", placeholder, rows: 1 }),
      h(AuiIf, { condition: isIdle }, h(ComposerPrimitive.Send, { "aria-label": "Send" }, "Send")),
      h(AuiIf, { condition: isRunning }, h(ComposerPrimitive.Cancel, { "aria-label": "Stop" }, "Stop")),
    ),
  );
}
