import type { Usage } from "@dpas/host";

const n = (v: number | undefined) => (v ?? 0).toLocaleString("en-IE");

/** Input and output side by side; cached and cache-write are parts of input, reasoning a
 *  part of output. Never one summed figure. */
export function TokenMeter({ turn, conversation }: { turn?: Usage; conversation?: Usage }) {
  if (!conversation) return null;
  const label = `Tokens in this conversation: ${n(conversation.inputTokens)} input, ${n(conversation.outputTokens)} output`;
  return (
    <div className="token-meter" role="group" aria-label={label} title={label}>
      <span className="meter-cell">
        <span className="meter-key">Input</span> <span data-meter="input">{n(conversation.inputTokens)}</span>
        <span className="subset">
          {" "}
          (cached {n(conversation.cachedInputTokens)}
          {conversation.cacheWriteInputTokens !== undefined && <>, cache write {n(conversation.cacheWriteInputTokens)}</>})
        </span>
      </span>
      <span className="meter-cell">
        <span className="meter-key">Output</span> <span data-meter="output">{n(conversation.outputTokens)}</span>
        <span className="subset"> (reasoning {n(conversation.reasoningTokens)})</span>
      </span>
      {turn && (
        <span className="meter-cell muted">
          last turn: {n(turn.inputTokens)} in / {n(turn.outputTokens)} out
        </span>
      )}
    </div>
  );
}
