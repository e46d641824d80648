// A server component: it renders the client component and nothing of @dpas/host itself.
import { Assistant } from "./assistant";

export default function Page() {
  return (
    <main>
      <Assistant />
    </main>
  );
}
