// @dpas/host/react: React bindings of the same package (React >= 18.2).
import type { ReactElement, ReactNode } from "react";
import type {
  CapabilitySchema,
  ComponentDef,
  ConfirmRequest,
  Conversation,
  ConversationOptions,
  ConversationState,
  ExposeWebMcpOptions,
  ProcedureExecutor,
  Surface,
} from "./index.js";

export interface SurfaceProviderProps {
  /** Runs `domain:<path>` references (typically the app's own RPC); read when one runs. */
  executeProcedure?: ProcedureExecutor;
  /** Registers the surface's capabilities with the browser's WebMCP, where it has it, under
   *  the same rules as a turn (off by default). Confirmations go to usePendingConfirmations()
   *  unless the options give `confirm`; read once. */
  webMcp?: boolean | ExposeWebMcpOptions;
  /** Rendered until the wasm is initialised and the Surface exists. */
  fallback?: ReactNode;
  children?: ReactNode;
}

/** Initialises the wasm once and provides the app's one Surface. An initialisation failure is
 *  thrown to the nearest error boundary. */
export declare function SurfaceProvider(props: SurfaceProviderProps): ReactElement;

/** The provider's Surface; throws outside a <SurfaceProvider>. */
export declare function useSurface(): Surface;

/** Registers the definition while the component is mounted; functions are read from the latest
 *  render (no dependency array), availability is re-evaluated after every commit. Each action's
 *  `execute` gets its `inputSchema`'s type (a Standard Schema's output). */
export declare function useAgentComponent<const A extends readonly CapabilitySchema[] = CapabilitySchema[]>(
  def: ComponentDef<A>,
): void;

export type UseConversationOptions = Omit<ConversationOptions, "surface">;

/** The component's conversation store, created and freed with it, its state as React state. */
export declare function useConversation(options: UseConversationOptions): {
  state: ConversationState;
  conversation: Conversation;
};

/** A confirmation request waiting for the user. */
export interface PendingConfirmation extends ConfirmRequest {
  approve(): void;
  deny(): void;
}

/** The live confirmation requests of conversations that were given no `confirm`. */
export declare function usePendingConfirmations(): readonly PendingConfirmation[];
