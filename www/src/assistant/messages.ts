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
  const parts: Part[] = [];
  const reasoning = stripChannelMarkers(message.reasoning).trim();
  if (reasoning) parts.push({ type: "reasoning", text: reasoning });
  const text = stripChannelMarkers(message.text);
  if (text.trim()) parts.push({ type: "text", text });
  for (const call of message.toolCalls) {
    const artifact: ToolArtifact = {
      canonicalId: call.canonicalId,
      wireName: call.wireName,
      executor: call.executor,
      state: call.state,
    };
    parts.push({
      type: "tool-call",
      toolCallId: call.toolCallId,
      toolName: call.canonicalId,
      args: asArgs(call.input),
      argsText: JSON.stringify(call.input ?? {}),
      artifact,
      ...(call.state === "running" ? {} : { result: call.result ?? null, isError: call.state === "error" }),
    });
  }
  const live = last && running;
  return {
    id: message.id || `m${index}`,
    role: "assistant",
    content: parts,
    status: live ? { type: "running" } : { type: "complete", reason: "stop" },
  };
}
