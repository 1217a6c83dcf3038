// Hash routing (#/clusters/default/services/web): the server serves three files whatever the view.
// Each segment is URI-encoded, so names with slashes (log groups) are one segment.
import { useEffect, useState } from "preact/hooks";

export function parseHash(hash: string): string[] {
  const path = hash.replace(/^#\/?/, "").split("?")[0] ?? "";
  return path.split("/").filter((s) => s !== "").map((s) => {
    try { return decodeURIComponent(s); } catch { return s; }
  });
}

/** "#/a/b%2Fc" from ["a", "b/c"]. */
export function href(...segments: (string | number)[]): string {
  return "#/" + segments.map((s) => encodeURIComponent(String(s))).join("/");
}

export function useRoute(): string[] {
  const [route, setRoute] = useState(parseHash(location.hash));
  useEffect(() => {
    const on = () => setRoute(parseHash(location.hash));
    addEventListener("hashchange", on);
    return () => removeEventListener("hashchange", on);
  }, []);
  return route;
}
