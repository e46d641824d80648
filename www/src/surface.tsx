// The app's one Surface from @dpas/host, shared through context, and a hook that keeps a
// component's capabilities registered exactly while it is mounted.
import { createContext, useContext, useEffect, useRef } from "react";
import type { ComponentDef, Surface } from "@dpas/host";

export const SurfaceContext = createContext<Surface | null>(null);

export function useSurface(): Surface {
  const surface = useContext(SurfaceContext);
  if (!surface) throw new Error("useSurface outside <SurfaceContext.Provider>");
  return surface;
}

/** Registers `build()` while mounted. The definition's callbacks read live state through
 *  refs, so it is built once per mount (and rebuilt only when `key` changes). */
export function useRegisterComponent(build: () => ComponentDef, key: string): void {
  const surface = useSurface();
  const buildRef = useRef(build);
  buildRef.current = build;
  useEffect(() => {
    const handle = surface.register(buildRef.current());
    return () => handle.unregister();
  }, [surface, key]);
}

/** A structured refusal: the host reports `code`/`retry`/`details` to the model. */
export class CapabilityError extends Error {
  readonly code: string;
  readonly retry: "no" | "yes" | "with-changes" | "after-refresh";
  readonly details?: unknown;
  constructor(
    code: string,
    message: string,
    retry: "no" | "yes" | "with-changes" | "after-refresh",
    details?: unknown,
  ) {
    super(message);
    this.name = "CapabilityError";
    this.code = code;
    this.retry = retry;
    this.details = details;
  }
}

export const EMPTY_INPUT_SCHEMA = {
  type: "object",
  properties: {},
  additionalProperties: false,
} as const;
