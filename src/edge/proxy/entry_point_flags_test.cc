#include "edge/proxy/entry_point_flags.h"

#include <limits>

#include <gtest/gtest.h>

namespace paddock::edge {
namespace {

TEST(ApplyEntryPointFlagsTest, SetsSanitizePathPerEntryPointAsTraefiksFlags) {
  struct Case {
    std::vector<std::string> args;
    bool web, admin;  // sanitize_path after
  };
  const Case cases[] = {
      {{}, true, true},
      {{"--entrypoints.web.http.sanitizepath=false"}, false, true},
      {{"--entryPoints.Admin.http.sanitizePath=FALSE"}, true, false},  // any case, as Traefik's flags
      {{"--entrypoints.web.http.sanitizepath", "f"}, false, true},
      {{"--entrypoints.web.http.sanitizepath=0", "--entrypoints.web.http.sanitizepath"}, true, true},  // bare: true
  };
  for (const Case& c : cases) {
    std::vector<EntryPointOptions> eps = {{.name = "web"}, {.name = "admin"}};
    Status s = ApplyEntryPointFlags(c.args, eps);
    ASSERT_TRUE(s.ok()) << s.ToString();
    EXPECT_EQ(eps[0].sanitize_path, c.web) << (c.args.empty() ? "" : c.args[0]);
    EXPECT_EQ(eps[1].sanitize_path, c.admin) << (c.args.empty() ? "" : c.args[0]);
  }
}

TEST(ApplyEntryPointFlagsTest, RefusesWhatItDoesNotCarryOutNamingIt) {
  struct Case {
    std::vector<std::string> args;
    std::string error;
  };
  const Case cases[] = {
      {{"--bogus"}, "unknown argument '--bogus'"},
      {{"--entrypoints.other.http.sanitizepath=false"}, "entry point other is not declared"},
      {{"--entrypoints.web.address=:80"}, "does not take entry point option address"},
      {{"--entrypoints.web.http.sanitizepath=maybe"}, "'maybe' is not a bool"},
      {{"--entrypoints.web=false"}, "is not --entrypoints.<name>.<option>"},
      {{"--entrypoints.web.http.sanitizepath=false", "--nope"}, "unknown argument '--nope'"},
      {{"--entrypoints.web.http.tls=sometimes"}, "'sometimes' is not a bool"},
      {{"--entrypoints.web.http.tls.domains[0].main=a.test"}, "does not take entry point option http.tls.domains"},
      {{"--entrypoints.web.http.middlewares"}, "needs a value"},
  };
  for (const Case& c : cases) {
    std::vector<EntryPointOptions> eps = {{.name = "web"}};
    Status s = ApplyEntryPointFlags(c.args, eps);
    ASSERT_FALSE(s.ok()) << c.args[0];
    EXPECT_NE(s.message().find(c.error), std::string::npos) << s.message();
    EXPECT_TRUE(eps[0].sanitize_path);  // unchanged on a refusal
  }
}

// Traefik's entry-point model flags: http.tls (allowEmpty: bare or true makes it), its options and
// certResolver, and http.middlewares (comma-separated).
TEST(ApplyEntryPointFlagsTest, TakesTheEntryPointModelsTlsAndMiddlewares) {
  std::vector<EntryPointOptions> eps = {{.name = "web"}, {.name = "websecure"}, {.name = "admin"}};
  Status s = ApplyEntryPointFlags({"--entrypoints.websecure.http.tls", "--entryPoints.websecure.http.tls.options=modern@file",
                                   "--entrypoints.websecure.http.tls.certResolver=le",
                                   "--entrypoints.websecure.http.middlewares=auth@file, headers@file",
                                   "--entrypoints.admin.http.tls=true", "--entrypoints.admin.http.tls=false"},
                                  eps);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_FALSE(eps[0].tls.has_value());
  EXPECT_TRUE(eps[0].middlewares.empty());
  ASSERT_TRUE(eps[1].tls.has_value());
  EXPECT_EQ(eps[1].tls->options, "modern@file");
  EXPECT_EQ(eps[1].tls->cert_resolver, "le");
  EXPECT_EQ(eps[1].middlewares, (std::vector<std::string>{"auth@file", "headers@file"}));
  EXPECT_FALSE(eps[2].tls.has_value());  // false after true: none
  // options alone make the section, as Traefik's parser makes a struct for any of its fields
  std::vector<EntryPointOptions> one = {{.name = "websecure"}};
  ASSERT_TRUE(ApplyEntryPointFlags({"--entrypoints.websecure.http.tls.options=strict"}, one).ok());
  ASSERT_TRUE(one[0].tls.has_value());
  EXPECT_EQ(one[0].tls->options, "strict");
}

TEST(ApplyEntryPointFlagsTest, TakesTraefiksRedirectionFlags) {
  std::vector<EntryPointOptions> eps = {{.name = "web", .port = 80}, {.name = "websecure", .port = 443}};
  Status s = ApplyEntryPointFlags({"--entrypoints.web.http.redirections.entrypoint.to=websecure",
                                   "--entryPoints.web.http.redirections.entryPoint.scheme", "https",
                                   "--entrypoints.web.http.redirections.entrypoint.permanent=false",
                                   "--entrypoints.web.http.redirections.entrypoint.priority=10"},
                                  eps);
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_TRUE(eps[0].redirect.has_value());
  EXPECT_EQ(eps[0].redirect->to, "websecure");
  EXPECT_EQ(eps[0].redirect->scheme, "https");
  EXPECT_FALSE(eps[0].redirect->permanent);
  EXPECT_EQ(eps[0].redirect->priority, 10);
  EXPECT_FALSE(eps[1].redirect.has_value());

  std::vector<EntryPointOptions> defaults = {{.name = "web", .port = 80}};
  ASSERT_TRUE(ApplyEntryPointFlags({"--entrypoints.web.http.redirections.entrypoint.to=:443"}, defaults).ok());
  EXPECT_EQ(defaults[0].redirect->scheme, "https");  // Traefik's defaults
  EXPECT_TRUE(defaults[0].redirect->permanent);
  EXPECT_EQ(defaults[0].redirect->priority, std::numeric_limits<int64_t>::max() - 1);
  EXPECT_TRUE(defaults[0].sanitize_path);
}

TEST(ApplyEntryPointFlagsTest, RefusesABadRedirectionAndChangesNothing) {
  struct Case {
    std::vector<std::string> args;
    std::string error;
  };
  const Case cases[] = {
      {{"--entrypoints.web.http.encodequerysemicolons=true"}, "does not take entry point option http.encodequerysemicolons"},
      {{"--entrypoints.other.http.redirections.entrypoint.to=web"}, "entry point other is not declared"},
      {{"--entrypoints.web.http.redirections.entrypoint.to=:443",
        "--entrypoints.web.http.redirections.entrypoint.permanent=maybe"}, "'maybe' is not a bool"},
      {{"--entrypoints.web.http.redirections.entrypoint.scheme=https"}, "a redirection needs"},
      {{"--entrypoints.web.http.redirections.entrypoint.to"}, "needs a value"},
      {{"--entrypoints.web.http.redirections.entrypoint.to=:443",
        "--entrypoints.web.http.redirections.entrypoint.priority=high"}, "'high' is not an integer"},
  };
  for (const Case& c : cases) {
    std::vector<EntryPointOptions> eps = {{.name = "web"}};
    Status s = ApplyEntryPointFlags(c.args, eps);
    ASSERT_FALSE(s.ok()) << c.args[0];
    EXPECT_NE(s.message().find(c.error), std::string::npos) << s.message();
    EXPECT_FALSE(eps[0].redirect.has_value());  // unchanged on a refusal
  }
}

TEST(ApplyEntryPointFlagsTest, TakesTraefiksRespondingTimeouts) {
  using std::chrono::milliseconds;
  std::vector<EntryPointOptions> eps = {{.name = "web"}, {.name = "admin"}};
  Status s = ApplyEntryPointFlags({"--entrypoints.web.transport.respondingTimeouts.readTimeout=5s",
                                   "--entryPoints.web.transport.respondingtimeouts.writetimeout", "1m30s",
                                   "--entrypoints.web.transport.respondingtimeouts.idletimeout=0",
                                   "--entrypoints.admin.transport.respondingtimeouts.idletimeout=42"},  // seconds
                                  eps);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(eps[0].read_timeout, milliseconds(5'000));
  EXPECT_EQ(eps[0].write_timeout, milliseconds(90'000));
  EXPECT_EQ(eps[0].idle_timeout, milliseconds(0));  // none
  EXPECT_EQ(eps[1].idle_timeout, milliseconds(42'000));
  EXPECT_FALSE(eps[1].read_timeout.has_value());  // the proxy's default

  for (std::string bad : {"--entrypoints.web.transport.respondingtimeouts.readtimeout=soon",
                          "--entrypoints.web.transport.respondingtimeouts.readtimeout=-1s",
                          "--entrypoints.web.transport.respondingtimeouts.lingertimeout=1s"}) {
    std::vector<EntryPointOptions> before = {{.name = "web"}};
    Status refused = ApplyEntryPointFlags({bad}, before);
    EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(refused.message().find(bad.substr(0, bad.find('='))), std::string::npos) << refused.message();
    EXPECT_FALSE(before[0].read_timeout.has_value()) << bad;
  }
}

// Traefik's --serversTransport.* flags: taken out of the words (the rest stays for the entry
// points' flags), in any case, a Go duration or bare seconds, and applied to the proxy's options.
TEST(TakeServersTransportFlagsTest, TakesTraefiksForwardingTimeoutsAndIdleConnections) {
  std::vector<std::string> args = {"--serversTransport.forwardingTimeouts.dialTimeout=2s",
                                   "--entrypoints.web.http.sanitizepath=false",
                                   "--serverstransport.forwardingtimeouts.responseheadertimeout", "1m30s",
                                   "--serversTransport.forwardingTimeouts.idleConnTimeout=5",
                                   "--serversTransport.maxIdleConnsPerHost=7"};
  ServersTransport st;
  Status s = TakeServersTransportFlags(args, st);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(args, std::vector<std::string>{"--entrypoints.web.http.sanitizepath=false"});
  EXPECT_EQ(st.dial_timeout, std::chrono::seconds(2));
  EXPECT_EQ(st.response_header_timeout, std::chrono::seconds(90));
  EXPECT_EQ(st.idle_conn_timeout, std::chrono::seconds(5));  // bare seconds, as Traefik's flags
  EXPECT_EQ(st.max_idle_conns_per_host, 7);

  ProxyOptions o;
  o.io_threads = 2;
  st.ApplyTo(o);
  EXPECT_EQ(o.upstream_connect_timeout, std::chrono::seconds(2));
  EXPECT_EQ(o.upstream_response_timeout, std::chrono::seconds(90));
  EXPECT_EQ(o.upstream_idle_timeout, std::chrono::seconds(5));
  EXPECT_EQ(o.max_idle_per_server, 4u);  // 7 shared by two threads, rounded up
}

TEST(TakeServersTransportFlagsTest, DefaultsAreTraefiksAndGosIdleConnectionRules) {
  ServersTransport st;  // Traefik's defaults
  ProxyOptions o;
  o.io_threads = 2;
  st.ApplyTo(o);
  EXPECT_EQ(o.upstream_connect_timeout, std::chrono::seconds(30));
  EXPECT_EQ(o.upstream_response_timeout, std::chrono::milliseconds(0));
  EXPECT_EQ(o.upstream_idle_timeout, std::chrono::seconds(90));
  EXPECT_EQ(o.max_idle_per_server, 100u);
  st.max_idle_conns_per_host = 0;  // Go's DefaultMaxIdleConnsPerHost: 2
  st.ApplyTo(o);
  EXPECT_EQ(o.max_idle_per_server, 1u);
  st.max_idle_conns_per_host = -1;  // Go keeps none
  st.ApplyTo(o);
  EXPECT_EQ(o.max_idle_per_server, 0u);
}

// Its TLS: insecureSkipVerify (a Go bool, bare: true; the next word only when it is a bool) and
// rootCAs (files, comma-separated), into the proxy's static upstream TLS.
TEST(TakeServersTransportFlagsTest, TakesInsecureSkipVerifyAndRootCas) {
  std::vector<std::string> args = {"--serversTransport.insecureSkipVerify", "--entrypoints.web.http.sanitizepath=false",
                                   "--serverstransport.rootcas", "/a.pem,/b.pem"};
  ServersTransport st;
  ASSERT_TRUE(TakeServersTransportFlags(args, st).ok());
  EXPECT_TRUE(st.insecure_skip_verify);
  EXPECT_EQ(st.root_cas, (std::vector<std::string>{"/a.pem", "/b.pem"}));
  EXPECT_EQ(args, (std::vector<std::string>{"--entrypoints.web.http.sanitizepath=false"}));
  ProxyOptions o;
  st.ApplyTo(o);
  EXPECT_TRUE(o.upstream_tls.insecure_skip_verify);
  EXPECT_EQ(o.upstream_tls.root_cas, st.root_cas);
  args = {"--serversTransport.insecureSkipVerify", "false", "web"};
  ASSERT_TRUE(TakeServersTransportFlags(args, st).ok());
  EXPECT_FALSE(st.insecure_skip_verify);
  EXPECT_EQ(args, (std::vector<std::string>{"web"}));
}

TEST(TakeServersTransportFlagsTest, RefusesWhatItDoesNotCarryOutAndChangesNothing) {
  struct Case {
    std::vector<std::string> args;
    std::string error;
  };
  const Case cases[] = {
      {{"--serversTransport.spiffe.ids=spiffe://a/b"}, "does not take serversTransport option spiffe.ids"},
      {{"--serversTransport.insecureSkipVerify=maybe"}, "'maybe' is not a bool"},
      {{"--serversTransport.rootCAs"}, "needs a value"},
      {{"--serversTransport.forwardingTimeouts.readIdleTimeout=1s"}, "option forwardingtimeouts.readidletimeout"},
      {{"--serversTransport.forwardingTimeouts.dialTimeout=soon"}, "invalid duration"},
      {{"--serversTransport.forwardingTimeouts.dialTimeout=-1s"}, "negative"},
      {{"--serversTransport.maxIdleConnsPerHost=many"}, "'many' is not an integer"},
      {{"--serversTransport.maxIdleConnsPerHost"}, "needs a value"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = c.args;
    args.insert(args.begin(), "--serversTransport.forwardingTimeouts.dialTimeout=1s");  // applied only if all are
    ServersTransport st;
    Status s = TakeServersTransportFlags(args, st);
    ASSERT_FALSE(s.ok()) << c.args[0];
    EXPECT_NE(s.message().find(c.error), std::string::npos) << s.message();
    EXPECT_EQ(st.dial_timeout, std::chrono::seconds(30));
    EXPECT_EQ(args.size(), c.args.size() + 1);
  }
}

TEST(ParseMetricsBucketsTest, TakesAscendingSecondsAsTraefiksBucketsFlag) {
  EXPECT_EQ(*ParseMetricsBuckets("0.1,0.3,1.2,5"), (std::vector<double>{0.1, 0.3, 1.2, 5}));
  EXPECT_EQ(*ParseMetricsBuckets(" 0.005, 2.5e1 "), (std::vector<double>{0.005, 25}));
  for (const char* bad : {"", "0.1,x", "0.3,0.1", "1,1", "inf", "0.1,,nan"}) {
    SCOPED_TRACE(bad);
    auto parsed = ParseMetricsBuckets(bad);
    ASSERT_FALSE(parsed.ok());
    EXPECT_TRUE(parsed.status().message().starts_with("--metrics.prometheus.buckets: ")) << parsed.status().message();
  }
  EXPECT_EQ(ParseMetricsBuckets("0.3,0.1").status().message(),
            "--metrics.prometheus.buckets: histogram buckets must be in increasing order: 0.3 >= 0.1");
}

}  // namespace
}  // namespace paddock::edge
