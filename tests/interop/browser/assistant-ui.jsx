// assistant-ui's own AG-UI adapter (`@assistant-ui/react-ag-ui`, unmodified) driving its
// standard primitives against /agent/ag-ui, wired exactly as its README shows: an
// `@ag-ui/client` HttpAgent handed to `useAgUiRuntime`. Bundled by esbuild in
// assistant-ui.test.mjs and served by host-server --static (same origin: the session cookie
// rides along).
import { HttpAgent } from "@ag-ui/client";
import {
  AssistantRuntimeProvider,
  ComposerPrimitive,
  MessagePrimitive,
  ThreadPrimitive,
} from "@assistant-ui/react";
import { useAgUiRuntime } from "@assistant-ui/react-ag-ui";
import { useMemo, useState } from "react";
import { createRoot } from "react-dom/client";

function Text({ text }) {
  return <p data-part="text">{text}</p>;
}

function Tool({ toolName, result, status }) {
  const state = result === undefined ? "running" : "done";
  return (
    <p data-part="tool" data-tool={toolName} data-state={state} data-status={status?.type}>
      {toolName}: {state}
    </p>
  );
}

const PARTS = { Text, tools: { Fallback: Tool } };

function UserMessage() {
  return (
    <MessagePrimitive.Root data-role="user">
      <MessagePrimitive.Parts components={PARTS} />
    </MessagePrimitive.Root>
  );
}

function AssistantMessage() {
  return (
    <MessagePrimitive.Root data-role="assistant">
      <MessagePrimitive.Parts components={PARTS} />
    </MessagePrimitive.Root>
  );
}

function App() {
  const [errors, setErrors] = useState([]);
  const agent = useMemo(() => new HttpAgent({ url: "/agent/ag-ui" }), []);
  const runtime = useAgUiRuntime({ agent, onError: (e) => setErrors((all) => [...all, e.message]) });
  return (
    <AssistantRuntimeProvider runtime={runtime}>
      <ThreadPrimitive.Root>
        <ThreadPrimitive.Messages components={{ UserMessage, AssistantMessage }} />
        <ComposerPrimitive.Root>
          <ComposerPrimitive.Input aria-label="Message" />
          <ComposerPrimitive.Send>Send</ComposerPrimitive.Send>
        </ComposerPrimitive.Root>
        <ThreadPrimitive.If running={false}>
          <output data-idle="true">idle</output>
        </ThreadPrimitive.If>
      </ThreadPrimitive.Root>
      {errors.map((e, i) => (
        <p key={i} role="alert">
          {e}
        </p>
      ))}
    </AssistantRuntimeProvider>
  );
}

createRoot(document.getElementById("root")).render(<App />);
