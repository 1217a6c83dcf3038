// Paddock's web console: the shell (sign-in, header, navigation, live-update state) and the hash
// routes to each view (views/*).
import { render } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { call, CONSOLE } from "./lib/api";
import { liveState, onLiveState, startLive, stopLive, type LiveState } from "./lib/live";
import { setAccount } from "./lib/info";
import { href, useRoute } from "./lib/router";
import { getSession, onSessionChange, setSession, type Session } from "./lib/session";
import { ErrorBox } from "./lib/ui";
import { Clusters } from "./views/Clusters";
import { Cluster } from "./views/Cluster";
import { Service } from "./views/Service";
import { Tasks } from "./views/Tasks";
import { Task } from "./views/Task";
import { TaskDefinitions, TaskDefinitionFamily } from "./views/TaskDefinitions";
import { LogGroups, LogGroup } from "./views/Logs";
import { Deployments, Deployment } from "./views/Deploy";
import { Edge } from "./views/Edge";
import { CloudMap, CloudMapService } from "./views/CloudMap";
import { Parameters } from "./views/Parameters";
import { Images } from "./views/Images";
import { SignIn } from "./views/SignIn";

export interface ConsoleInfo {
  account: string;
  arn: string;
  region: string;
  features: { edge?: boolean; deploy?: boolean; images?: boolean };
}

function useSession(): Session | null {
  const [s, setS] = useState(getSession());
  useEffect(() => onSessionChange(() => setS(getSession())), []);
  return s;
}

function useLiveState(): LiveState {
  const [s, setS] = useState(liveState());
  useEffect(() => onLiveState(setS), []);
  return s;
}

const NAV: { path: string; label: string; feature?: keyof ConsoleInfo["features"] }[] = [
  { path: "clusters", label: "Clusters" },
  { path: "taskdefs", label: "Task definitions" },
  { path: "logs", label: "Logs" },
  { path: "deploy", label: "Deployments", feature: "deploy" },
  { path: "edge", label: "Edge", feature: "edge" },
  { path: "cloudmap", label: "Cloud Map" },
  { path: "parameters", label: "Parameters" },
  { path: "images", label: "Images", feature: "images" },
];

function Unavailable({ what, info }: { what: string; info: ConsoleInfo | undefined }) {
  return (
    <section>
      <h1>{what}</h1>
      <p>{info ? `This server has no ${what.toLowerCase()} for account ${info.account}, or this account is not ` +
        "the one it belongs to (GetConsoleInfo's features say so)." : "Waiting for GetConsoleInfo…"}</p>
    </section>
  );
}

function View({ route, info }: { route: string[]; info: ConsoleInfo | undefined }) {
  const [top, a, b, c] = route;
  switch (top) {
    case undefined:
    case "clusters":
      if (a === undefined) return <Clusters />;
      if (b === "services" && c !== undefined) return <Service cluster={a} service={c} />;
      if (b === "tasks" && c !== undefined) return <Task cluster={a} task={c} />;
      if (b === "tasks") return <Tasks cluster={a} />;
      return <Cluster cluster={a} />;
    case "taskdefs":
      if (a === undefined) return <TaskDefinitions />;
      return <TaskDefinitionFamily family={a} revision={b} />;
    case "logs":
      if (a === undefined) return <LogGroups />;
      return <LogGroup group={a} stream={b} />;
    case "deploy":
      if (!info?.features.deploy) return <Unavailable what="Deployments" info={info} />;
      if (a === undefined) return <Deployments />;
      return <Deployment id={a} />;
    case "edge":
      if (!info?.features.edge) return <Unavailable what="Edge" info={info} />;
      return <Edge />;
    case "cloudmap":
      if (a === "services" && b !== undefined) return <CloudMapService id={b} />;
      return <CloudMap />;
    case "parameters":
      return <Parameters />;
    case "images":
      if (!info?.features.images) return <Unavailable what="Images" info={info} />;
      return <Images />;
    default:
      return <section><h1>Not found</h1><p>No view at this address. <a href="#/clusters">Clusters</a></p></section>;
  }
}

function Shell({ session }: { session: Session }) {
  const route = useRoute();
  const live = useLiveState();
  const [info, setInfo] = useState<ConsoleInfo | undefined>(undefined);
  const [infoError, setInfoError] = useState<unknown>(undefined);
  const [navOpen, setNavOpen] = useState(false);
  const mainRef = useRef<HTMLElement>(null);

  useEffect(() => {
    startLive();
    call<ConsoleInfo>(CONSOLE, "GetConsoleInfo", {}).then((i) => { setAccount(i.account); setInfo(i); }, setInfoError);
    return () => stopLive();
  }, [session.accessKeyId]);

  useEffect(() => {
    if (!session.expiration) return undefined;
    const left = Date.parse(session.expiration) - Date.now();
    const t = setTimeout(() => setSession(null), Math.max(0, Math.min(left, 2 ** 31 - 1)));
    return () => clearTimeout(t);
  }, [session.expiration]);

  useEffect(() => setNavOpen(false), [route.join("/")]);

  const current = route[0] ?? "clusters";
  return (
    <div class="shell">
      <a class="skip" href="#main" onClick={(e) => { e.preventDefault(); mainRef.current?.focus(); }}>
        Skip to content
      </a>
      <header class="top">
        <a class="brand" href="#/clusters">Paddock console</a>
        <button type="button" class="nav-toggle" aria-expanded={navOpen} aria-controls="nav"
          onClick={() => setNavOpen(!navOpen)}>Menu</button>
        <span class={`live live-${live}`} role="status" title="Live updates (WatchChanges)">
          {live === "live" ? "Live" : live === "connecting" ? "Connecting…" : live === "retrying" ? "Reconnecting…" : "Offline"}
        </span>
        <span class="who" title={info?.arn}>{info ? `${info.arn} · ${session.region}` : session.region}</span>
        <button type="button" onClick={() => setSession(null)}>Sign out</button>
      </header>
      <nav id="nav" class={navOpen ? "open" : ""} aria-label="Views">
        <ul>
          {NAV.map((n) => (
            <li key={n.path}>
              <a href={href(n.path)} aria-current={current === n.path ? "page" : undefined}
                class={n.feature && info && !info.features[n.feature] ? "unavailable" : ""}>{n.label}</a>
            </li>
          ))}
        </ul>
      </nav>
      <main id="main" ref={mainRef} tabIndex={-1}>
        <ErrorBox error={infoError} what="GetConsoleInfo" />
        <View route={route} info={info} />
      </main>
    </div>
  );
}

function App() {
  const session = useSession();
  const [wasSignedIn, setWasSignedIn] = useState(false);
  useEffect(() => { if (session) setWasSignedIn(true); }, [session]);
  if (!session) return <SignIn notice={wasSignedIn ? "Signed out (or the session expired)." : undefined} />;
  return <Shell session={session} />;
}

performance.mark("app-start");
render(<App />, document.getElementById("app")!);
