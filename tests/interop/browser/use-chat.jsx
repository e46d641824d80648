// A minimal page on @ai-sdk/react's useChat, unmodified, pointed at /agent/ai-sdk. Bundled by
// esbuild in use-chat.test.mjs and served by host-server --static.
import { useChat } from "@ai-sdk/react";
import { DefaultChatTransport } from "ai";
import { createRoot } from "react-dom/client";

function Part({ part }) {
  if (part.type === "text") return <p data-part="text">{part.text}</p>;
  if (part.type === "dynamic-tool") {
    return (
      <p data-part="tool" data-tool={part.toolName} data-state={part.state}>
        {part.toolName}: {part.state}
      </p>
    );
  }
  return null;
}

function App() {
  const { messages, sendMessage, status, error } = useChat({
    transport: new DefaultChatTransport({ api: "/agent/ai-sdk", body: { pathname: "/receivables/pending" } }),
  });
  return (
    <main>
      <button type="button" onClick={() => sendMessage({ text: "How is the ageing?" })}>
        Ask
      </button>
      <output data-status={status}>{status}</output>
      {error && <p role="alert">{error.message}</p>}
      {messages.map((m) => (
        <section key={m.id} data-role={m.role}>
          {m.parts.map((part, i) => (
            <Part key={i} part={part} />
          ))}
        </section>
      ))}
    </main>
  );
}

createRoot(document.getElementById("root")).render(<App />);
