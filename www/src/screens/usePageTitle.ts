import { useEffect } from "react";
import { titleFor } from "../routes";

export function usePageTitle(pathname: string): void {
  useEffect(() => {
    document.title = titleFor(pathname);
  }, [pathname]);
}
