// What an app imports to get the AI SDK's chat client in React: the hook and its transport.
export { useChat } from "@ai-sdk/react";
export { DefaultChatTransport } from "ai";
