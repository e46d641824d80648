// ChatMessageView (from @dpas/host's Conversation) → assistant-ui's ThreadMessageLike.
import type { ThreadMessageLike } from "@assistant-ui/react";
import type { ChatMessageView, ToolCallView } from "@dpas/host";

/** Harmony-style channel and control tokens some models leak (`<|channel|>analysis`,
 *  `<|message|>`, `<|end|>`…): never shown. */
const CONTROL_TOKEN = /<\|[a-z_]+\|>(?:analysis|commentary|final)?/gi;

export function stripChannelMarkers(text: string): string {
  return text.replace(CONTROL_TOKEN, "");
}

export interface ToolArtifact {
  canonicalId: string;
  wireName: string;
  executor: "server" | "browser";
  state: ToolCallView["state"];
}

type Part = Exclude<ThreadMessageLike["content"], string>[number];
type ToolArgs = NonNullable<Extract<Part, { type: "tool-call" }>["args"]>;

function asArgs(input: unknown): ToolArgs {
  return input && typeof input === "object" && !Array.isArray(input) ? (input as ToolArgs) : {};
}

export function toThreadMessage(
  message: ChatMessageView,
  index: number,
  last: boolean,
  running: boolean,
): ThreadMessageLike {
  if (message.role === "user") {
    return { id: message.id || `m${index}`, role: "user", content: message.text };
  }
  // The parts in the order the model produced them: a text after a tool call shows below it.
  const parts: Part[] = [];
  for (const part of message.parts) {
    if (part.type === "reasoning") {
      const reasoning = stripChannelMarkers(part.text).trim();
      if (reasoning) parts.push({ type: "reasoning", text: reasoning });
    } else if (part.type === "text") {
      const text = stripChannelMarkers(part.text);
      if (text.trim()) parts.push({ type: "text", text });
    } else {
      parts.push(toolCallPart(part));
    }
  }
  const live = last && running;
  return {
    id: message.id || `m${index}`,
    role: "assistant",
    content: parts,
    status: live ? { type: "running" } : { type: "complete", reason: "stop" },
  };
}

function toolCallPart(call: ToolCallView): Part {
  const artifact: ToolArtifact = {
    canonicalId: call.canonicalId,
    wireName: call.wireName,
    executor: call.executor,
    state: call.state,
  };
  return {
    type: "tool-call",
    toolCallId: call.toolCallId,
    toolName: call.canonicalId,
    args: asArgs(call.input),
    argsText: JSON.stringify(call.input ?? {}),
    artifact,
    ...(call.state === "running" ? {} : { result: call.result ?? null, isError: call.state === "error" }),
  };
}
