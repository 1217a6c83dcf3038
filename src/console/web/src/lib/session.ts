// The signed-in session: short-lived credentials (from STS GetSessionToken, or a session the user
// pasted) and the region, kept in sessionStorage only — gone when the tab closes, never the long-term
// secret, never in a URL.
import type { Credentials } from "./sigv4";

export interface Session extends Credentials {
  region: string;
  expiration?: string; // ISO 8601; absent when the user gave a session of unknown lifetime
}

const KEY = "paddock-console-session";

export function loadSession(): Session | null {
  try {
    const text = sessionStorage.getItem(KEY);
    if (!text) return null;
    const s = JSON.parse(text) as Session;
    if (!s.accessKeyId || !s.secretAccessKey || !s.region) return null;
    if (s.expiration && Date.parse(s.expiration) <= Date.now()) {
      sessionStorage.removeItem(KEY);
      return null;
    }
    return s;
  } catch {
    return null;
  }
}

export function saveSession(s: Session): void {
  sessionStorage.setItem(KEY, JSON.stringify(s));
}

export function clearSession(): void {
  sessionStorage.removeItem(KEY);
}

let current: Session | null = loadSession();
const listeners = new Set<() => void>();

export function getSession(): Session | null {
  return current;
}

export function setSession(s: Session | null): void {
  current = s;
  if (s) saveSession(s);
  else clearSession();
  for (const l of listeners) l();
}

export function onSessionChange(l: () => void): () => void {
  listeners.add(l);
  return () => listeners.delete(l);
}
