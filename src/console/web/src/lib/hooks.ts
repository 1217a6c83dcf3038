// Data loading for views: useLoad runs a loader, keeps its last answer while a refresh runs, and
// refreshes when the live feed (live.ts) reports a change of one of `kinds` (debounced 100 ms).
import { useCallback, useEffect, useLayoutEffect, useRef, useState } from "preact/hooks";
import { onChange } from "./live";

export interface Loaded<T> {
  data: T | undefined;
  error: unknown;
  loading: boolean;
  reload: () => void;
}

export function useLoad<T>(loader: () => Promise<T>, deps: unknown[], kinds: string[] = []): Loaded<T> {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const [loading, setLoading] = useState(true);
  const generation = useRef(0);
  const loaderRef = useRef(loader);
  loaderRef.current = loader;

  const reload = useCallback(() => {
    const mine = ++generation.current;
    setLoading(true);
    loaderRef.current().then(
      (d) => { if (mine === generation.current) { setData(d); setError(undefined); setLoading(false); } },
      (e) => { if (mine === generation.current) { setError(e); setLoading(false); } });
  }, []);

  // A layout effect: the call starts right after the commit rather than a frame later.
  useLayoutEffect(() => {
    setData(undefined);
    setError(undefined);
    reload();
  }, deps);

  useLive(kinds, reload);
  return { data, error, loading, reload };
}

/** Calls `refresh` (debounced 100 ms) when a change of one of `kinds` arrives. */
export function useLive(kinds: string[], refresh: () => void): void {
  const refreshRef = useRef(refresh);
  refreshRef.current = refresh;
  const key = kinds.join(",");
  useEffect(() => {
    if (!kinds.length) return undefined;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const off = onChange((changed) => {
      if (!changed.some((k) => kinds.includes(k))) return;
      clearTimeout(timer);
      timer = setTimeout(() => refreshRef.current(), 100);
    });
    return () => { off(); clearTimeout(timer); };
  }, [key]);
}

/** A ticking clock (for "x s ago" and expiry), every `ms`. */
export function useNow(ms = 1000): number {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), ms);
    return () => clearInterval(t);
  }, [ms]);
  return now;
}
