// edge/dashboard: the read-only dashboard on the API entry point (Traefik's `traefik`) — one page
// whose script reads the edge's own API (/api/overview, /api/http/routers|services|middlewares,
// /api/paddock/drains) and shows the routers, the services with each server's health (UP, DOWN, or
// pending its first probe), the middlewares and the drains in progress, refreshed every 3 s. The
// page, its script and its style are compiled into the binary: nothing is fetched from elsewhere.
//
// Names, rules and errors come from tenants' task labels: the script only ever writes them as text
// (textContent, never markup), and the page is served with a Content-Security-Policy that allows
// scripts and styles from the edge itself only (no inline script, no inline handler, no eval).
//
// Paths (as Traefik v3's dashboard router on its `traefik` entry point, except where noted):
//   /                   301 (308 for a method other than GET) to http://<Host>/dashboard/ when
//                       Host is a plain host[:port] and there is no query; otherwise the page
//   /dashboard/, /dashboard        the page (Traefik serves its index at both)
//   /dashboard/app.js, /dashboard/app.css                       its script and style
//   GET and HEAD only on the page and its files (Traefik answers any method; ours: 405)
//
//   if (auto r = edge::ServeDashboard(request)) return *r;   // else: not a dashboard path
#pragma once

#include <optional>
#include <string_view>

#include "http/message.h"

namespace paddock::edge {

// The dashboard's answer to `request`, or nullopt when its path is not one of the dashboard's.
std::optional<http::Response> ServeDashboard(const http::Request& request);

// The page, script and style as served (for tests that inspect them).
std::string_view DashboardHtml();
std::string_view DashboardScript();
std::string_view DashboardStyle();

}  // namespace paddock::edge
