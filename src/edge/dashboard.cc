#include "edge/dashboard.h"

#include <string>

namespace paddock::edge {
namespace {

// Scripts, styles and API reads from the edge itself only; nothing inline, nothing framed.
constexpr std::string_view kPolicy =
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

// Asset paths are absolute: the page is served at /dashboard as well as /dashboard/.
constexpr std::string_view kHtml = R"HTML(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Paddock edge</title>
<link rel="stylesheet" href="/dashboard/app.css">
<script src="/dashboard/app.js" defer></script>
</head>
<body data-state="loading">
<header>
<h1>Paddock edge</h1>
<span id="updated">Loading...</span>
</header>
<p id="error" hidden></p>
<noscript><p>This page needs JavaScript. The same data is at <a href="/api/rawdata">/api/rawdata</a>.</p></noscript>
<main>
<section><h2>Overview</h2><div id="overview"></div></section>
<section><h2>Routers</h2><div id="routers"></div></section>
<section><h2>Services</h2><div id="services"></div></section>
<section><h2>Middlewares</h2><div id="middlewares"></div></section>
<section><h2>Drains in progress</h2><div id="drains"></div></section>
</main>
</body>
</html>
)HTML";

// Every value the API returns is written with textContent: names, rules and errors come from
// tenants' labels. Class names are chosen from fixed sets, never taken from the data.
constexpr std::string_view kScript = R"JS('use strict';
(() => {
  const REFRESH_MS = 3000;
  const STATUS_CLASS = {enabled: 'ok', warning: 'warn', disabled: 'bad', UP: 'ok', DOWN: 'bad'};
  const has = (object, key) => Object.prototype.hasOwnProperty.call(object, key);

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function none() { return el('span', 'none', '-'); }

  function badge(value) {
    const text = value === undefined || value === null ? 'unknown' : String(value);
    return el('span', 'badge ' + (has(STATUS_CLASS, text) ? STATUS_CLASS[text] : 'other'), text);
  }

  function list(items, className) {
    if (!Array.isArray(items) || items.length === 0) return none();
    const ul = el('ul', className);
    for (const item of items) ul.appendChild(el('li', null, typeof item === 'string' ? item : JSON.stringify(item)));
    return ul;
  }

  // A table of `rows` (arrays of cells: a DOM node, or a value written as text).
  function table(headers, rows, emptyText) {
    if (rows.length === 0) return el('p', 'empty', emptyText);
    const t = el('table');
    const head = t.createTHead().insertRow();
    for (const h of headers) head.appendChild(el('th', null, h));
    const body = t.createTBody();
    for (const cells of rows) {
      const tr = body.insertRow();
      for (const cell of cells) {
        const td = tr.insertCell();
        if (cell instanceof Node) td.appendChild(cell);
        else td.textContent = cell === undefined || cell === null ? '' : String(cell);
      }
    }
    return t;
  }

  function overview(o) {
    const cards = el('div', 'cards');
    const http = (o && o.http) || {};
    for (const [label, key] of [['Routers', 'routers'], ['Services', 'services'], ['Middlewares', 'middlewares']]) {
      const s = http[key] || {};
      const card = el('div', 'card');
      card.appendChild(el('h3', null, label));
      card.appendChild(el('p', 'total', s.total || 0));
      card.appendChild(el('p', 'detail', (s.warnings || 0) + ' warnings, ' + (s.errors || 0) + ' errors'));
      cards.appendChild(card);
    }
    const providers = el('div', 'card');
    providers.appendChild(el('h3', null, 'Providers'));
    providers.appendChild(el('p', 'detail', Array.isArray(o && o.providers) ? o.providers.join(', ') : '-'));
    cards.appendChild(providers);
    return cards;
  }

  function routerRow(r) {
    const entryPoints = Array.isArray(r.using) ? r.using : r.entryPoints;
    return [el('span', 'name', r.name), el('code', null, r.rule), list(entryPoints), r.service,
            list(r.middlewares), badge(r.status), list(r.error, 'errors')];
  }

  // A load balancer's servers, each with its health: UP or DOWN from serverStatus, or pending its
  // first probe when the service has a health check that has not answered yet (no entry). Other
  // kinds of service list the services they send to.
  function targets(s) {
    const status = s.serverStatus || {};
    if (s.loadBalancer) {
      const urls = [];
      for (const server of Array.isArray(s.loadBalancer.servers) ? s.loadBalancer.servers : []) {
        if (server && typeof server.url === 'string' && !urls.includes(server.url)) urls.push(server.url);
      }
      for (const url of Object.keys(status)) if (!urls.includes(url)) urls.push(url);
      if (urls.length === 0) return none();
      const ul = el('ul', 'servers');
      for (const url of urls) {
        const li = el('li', 'server');
        li.appendChild(el('span', 'url', url));
        li.appendChild(document.createTextNode(' '));
        li.appendChild(has(status, url) ? badge(status[url]) : el('span', 'badge pending', 'pending first probe'));
        ul.appendChild(li);
      }
      return ul;
    }
    const names = [];
    if (s.weighted && Array.isArray(s.weighted.services)) {
      for (const w of s.weighted.services) {
        names.push(String(w.name) + (w.weight !== undefined ? ' (weight ' + w.weight + ')' : ''));
      }
    }
    if (s.mirroring) {
      if (s.mirroring.service) names.push(String(s.mirroring.service));
      const mirrors = Array.isArray(s.mirroring.mirrors) ? s.mirroring.mirrors : [];
      for (const m of mirrors) names.push(String(m.name) + ' (mirror)');
    }
    if (s.failover) {
      if (s.failover.service) names.push(String(s.failover.service));
      if (s.failover.fallback) names.push(String(s.failover.fallback) + ' (fallback)');
    }
    return list(names);
  }

  function serviceRow(s) {
    return [el('span', 'name', s.name), s.type, badge(s.status), targets(s), list(s.usedBy), list(s.error, 'errors')];
  }

  function middlewareRow(m) {
    return [el('span', 'name', m.name), m.type, badge(m.status), list(m.usedBy), list(m.error, 'errors')];
  }

  function timeLeft(deadline) {
    const t = Date.parse(deadline);
    if (Number.isNaN(t)) return '';
    const s = Math.round((t - Date.now()) / 1000);
    return s >= 0 ? ' (' + s + ' s left)' : ' (passed ' + -s + ' s ago)';
  }

  function drainRow(d) {
    return [el('span', 'name', d.taskArn), el('span', 'url', d.url), d.inFlight, d.since,
            String(d.deadline) + timeLeft(d.deadline)];
  }

  async function getJson(path) {
    const response = await fetch(path, {cache: 'no-store', credentials: 'same-origin'});
    if (!response.ok) throw new Error(path + ': HTTP ' + response.status);
    return {body: await response.json(), next: response.headers.get('X-Next-Page')};
  }

  // Every page of a list: X-Next-Page is the next page, or 1 on the last.
  async function getList(path) {
    const all = [];
    let page = 1;
    for (let pages = 0; pages < 1000; pages++) {
      const {body, next} = await getJson(path + '?per_page=100&page=' + page);
      if (Array.isArray(body)) all.push(...body);
      const following = Number.parseInt(next || '1', 10);
      if (!(following > page)) break;
      page = following;
    }
    return all;
  }

  function show(id, node) { document.getElementById(id).replaceChildren(node); }

  async function refresh() {
    const error = document.getElementById('error');
    try {
      const [o, routers, services, middlewares, drains] = await Promise.all([
        getJson('/api/overview').then((r) => r.body), getList('/api/http/routers'), getList('/api/http/services'),
        getList('/api/http/middlewares'), getJson('/api/paddock/drains').then((r) => r.body)]);
      show('overview', overview(o));
      show('routers', table(['Name', 'Rule', 'Entry points', 'Service', 'Middlewares', 'Status', 'Errors'],
                            routers.map(routerRow), 'No routers.'));
      show('services', table(['Name', 'Type', 'Status', 'Servers', 'Used by', 'Errors'],
                             services.map(serviceRow), 'No services.'));
      show('middlewares', table(['Name', 'Type', 'Status', 'Used by', 'Errors'],
                                middlewares.map(middlewareRow), 'No middlewares.'));
      show('drains', table(['Task', 'Server', 'In flight', 'Since', 'Deadline'],
                           (Array.isArray(drains) ? drains : []).map(drainRow), 'No drains in progress.'));
      error.hidden = true;
      error.textContent = '';
      document.getElementById('updated').textContent = 'Updated ' + new Date().toLocaleTimeString();
      document.body.setAttribute('data-state', 'ready');
    } catch (e) {
      error.textContent = 'Could not read the API: ' + (e && e.message ? e.message : String(e));
      error.hidden = false;
      document.body.setAttribute('data-state', 'error');
    } finally {
      setTimeout(refresh, REFRESH_MS);
    }
  }

  refresh();
})();
)JS";

constexpr std::string_view kStyle = R"CSS(
body { font: 14px/1.4 system-ui, sans-serif; margin: 0; color: #1d2430; background: #f5f6f8; }
header { display: flex; align-items: baseline; gap: 1em; padding: 0.8em 1.5em; background: #1d2430; color: #fff; }
header h1 { font-size: 1.2em; margin: 0; }
#updated { color: #b8c0cc; font-size: 0.9em; }
main { padding: 0 1.5em 2em; }
h2 { font-size: 1.05em; margin: 1.5em 0 0.5em; }
#error { margin: 1em 1.5em; padding: 0.6em 1em; background: #fde8e8; color: #8a1c1c; border-radius: 4px; }
.cards { display: flex; flex-wrap: wrap; gap: 1em; }
.card { background: #fff; border-radius: 6px; padding: 0.6em 1em; min-width: 10em; box-shadow: 0 1px 2px #0002; }
.card h3 { font-size: 0.9em; margin: 0; color: #5a6270; }
.card .total { font-size: 1.8em; margin: 0; }
.card .detail { margin: 0; color: #5a6270; }
table { border-collapse: collapse; width: 100%; background: #fff; box-shadow: 0 1px 2px #0002; }
th, td { text-align: left; vertical-align: top; padding: 0.4em 0.7em; border-bottom: 1px solid #e3e6ea;
         overflow-wrap: anywhere; }
th { background: #eef0f3; font-weight: 600; }
ul { margin: 0; padding: 0; list-style: none; }
code { font-size: 0.95em; }
.badge { display: inline-block; padding: 0 0.5em; border-radius: 3px; font-size: 0.85em; font-weight: 600;
         background: #e3e6ea; }
.badge.ok { background: #dcf3e3; color: #17612f; }
.badge.warn { background: #fff1cc; color: #7a5600; }
.badge.bad { background: #fde8e8; color: #8a1c1c; }
.badge.pending { background: #e6ecf8; color: #2f4a80; }
.errors li { color: #8a1c1c; }
.none, .empty { color: #8a919c; }
)CSS";

bool IsWordChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// Whether `host` is what Traefik's dashboard redirect accepts: `[word:.]` or `word._-`, then an
// optional `:digits` (its regex ^(http://(\[[\w:.]+\]|[\w._-]+)(:\d+)?)/$).
bool IsPlainHost(std::string_view host) {
  size_t i = 0;
  if (!host.empty() && host[0] == '[') {
    const size_t close = host.find(']');
    if (close == std::string_view::npos || close == 1) return false;
    for (size_t j = 1; j < close; ++j) {
      if (!IsWordChar(host[j]) && host[j] != ':' && host[j] != '.') return false;
    }
    i = close + 1;
  } else {
    while (i < host.size() && (IsWordChar(host[i]) || host[i] == '.' || host[i] == '-')) ++i;
    if (i == 0) return false;
  }
  if (i == host.size()) return true;
  if (host[i] != ':' || i + 1 == host.size()) return false;
  for (size_t j = i + 1; j < host.size(); ++j) {
    if (host[j] < '0' || host[j] > '9') return false;
  }
  return true;
}

http::Response Serve(const http::Request& request, std::string_view content_type, std::string_view body) {
  http::Response r;
  if (request.method != "GET" && request.method != "HEAD") {
    r.status = 405;
    r.SetHeader("Allow", "GET, HEAD");
    return r;
  }
  r.SetHeader("Content-Type", std::string(content_type));
  r.SetHeader("Content-Security-Policy", std::string(kPolicy));
  r.SetHeader("X-Content-Type-Options", "nosniff");
  r.SetHeader("X-Frame-Options", "DENY");
  r.SetHeader("Referrer-Policy", "no-referrer");
  r.SetHeader("Cache-Control", "no-cache");
  if (request.method != "HEAD") r.body = std::string(body);
  return r;
}

}  // namespace

std::string_view DashboardHtml() { return kHtml; }
std::string_view DashboardScript() { return kScript; }
std::string_view DashboardStyle() { return kStyle; }

std::optional<http::Response> ServeDashboard(const http::Request& request) {
  const std::string_view path = request.Path();
  if (path == "/") {
    // Traefik's dashboard_redirect: only `http://<plain host>/` itself (no query) is redirected;
    // anything else at / is the page.
    const std::string_view host = request.GetHeader("Host");
    if (request.target == "/" && IsPlainHost(host)) {
      http::Response r;
      const bool get = request.method == "GET";
      r.status = get ? 301 : 308;
      r.SetHeader("Location", "http://" + std::string(host) + "/dashboard/");
      r.SetHeader("Content-Type", "text/plain; charset=utf-8");
      if (request.method != "HEAD") r.body = get ? "Moved Permanently" : "Permanent Redirect";
      return r;
    }
    return Serve(request, "text/html; charset=utf-8", kHtml);
  }
  if (path == "/dashboard/" || path == "/dashboard") return Serve(request, "text/html; charset=utf-8", kHtml);
  if (path == "/dashboard/app.js") return Serve(request, "text/javascript; charset=utf-8", kScript);
  if (path == "/dashboard/app.css") return Serve(request, "text/css; charset=utf-8", kStyle);
  return std::nullopt;
}

}  // namespace paddock::edge
