import { useId, useState } from "react";
import { mcpToken, type McpToken } from "./api";

/** "Connect an MCP client": a bearer token for the signed-in user and the MCP endpoint, to
 *  paste into Claude Desktop, an IDE or any MCP client. The token is the user's session:
 *  the client acts as this user, under the same policies and approvals. */
export function McpConnect() {
  const [open, setOpen] = useState(false);
  const [token, setToken] = useState<McpToken | null>(null);
  const [error, setError] = useState<string | null>(null);
  const titleId = useId();

  const show = async () => {
    setOpen(true);
    setError(null);
    try {
      setToken(await mcpToken());
    } catch (e) {
      setError(e instanceof Error ? e.message : String(e));
    }
  };
  const close = () => {
    setOpen(false);
    setToken(null);
  };

  return (
    <>
      <button type="button" onClick={() => void show()}>
        Connect an MCP client
      </button>
      {open && (
        <div className="dialog-backdrop" onKeyDown={(e) => e.key === "Escape" && close()}>
          <div role="dialog" aria-modal="true" aria-labelledby={titleId} className="dialog">
            <h2 id={titleId}>Connect an MCP client</h2>
            {token ? (
              <>
                <p>
                  Point your MCP client at this server with the header below. It acts as you, with your role's tools;
                  writes that need approval send you a link back here.
                </p>
                <label className="field">
                  <span>MCP URL (streamable HTTP)</span>
                  <input readOnly value={token.mcpUrl} aria-label="MCP URL" />
                </label>
                <label className="field">
                  <span>Authorization header</span>
                  <textarea readOnly rows={4} value={`Bearer ${token.token}`} aria-label="Authorization header" />
                </label>
                <p className="muted">Valid until {new Date(token.expiresAt).toLocaleString()}.</p>
              </>
            ) : error ? (
              <p role="alert">{error}</p>
            ) : (
              <p className="loading">Loading…</p>
            )}
            <div className="dialog-actions">
              <button type="button" onClick={close}>
                Close
              </button>
            </div>
          </div>
        </div>
      )}
    </>
  );
}
