// Signs the page in as the demo's controller (the session cookie the package's requests send).
export async function signIn() {
  const session = await fetch("/api/session", {
    method: "POST",
    credentials: "include",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ role: "controller" }),
  });
  if (!session.ok) throw new Error(`sign-in failed: ${session.status}`);
}
