// Traefik's headers middleware: custom request and response headers, CORS (answering preflight
// requests itself) and the security headers of unrolled/secure as Traefik v3 configures it.
#include <algorithm>

#include <fmt/format.h>
#include <re2/re2.h>

#include "edge/internal/middleware_util.h"

namespace paddock::edge::mw {
namespace {

std::string Join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) {
    if (!out.empty()) out += ',';
    out += item;
  }
  return out;
}

bool Contains(const std::vector<std::string>& items, std::string_view item) {
  return std::find(items.begin(), items.end(), item) != items.end();
}

struct HeadersConfig {
  std::vector<std::pair<std::string, std::string>> custom_request;
  std::vector<std::pair<std::string, std::string>> custom_response;
  // CORS
  bool allow_credentials = false;
  std::vector<std::string> allow_headers;
  std::vector<std::string> allow_methods;
  std::vector<std::string> allow_origins;
  std::vector<std::shared_ptr<const re2::RE2>> allow_origin_regexes;
  std::vector<std::string> expose_headers;
  std::optional<int64_t> max_age;
  bool add_vary = false;
  // Security (unrolled/secure)
  std::vector<std::string> allowed_hosts;
  std::vector<std::string> hosts_proxy_headers;
  std::vector<std::pair<std::string, std::string>> ssl_proxy_headers;
  int64_t sts_seconds = 0;
  bool sts_include_subdomains = false;
  bool sts_preload = false;
  bool force_sts = false;
  bool frame_deny = false;
  std::string custom_frame_options;
  bool content_type_nosniff = false;
  bool browser_xss_filter = false;
  std::string custom_browser_xss;
  std::string content_security_policy;
  std::string content_security_policy_report_only;
  std::string public_key;
  std::string referrer_policy;
  std::string permissions_policy;
  bool is_development = false;

  bool has_custom = false;
  bool has_cors = false;
  bool has_secure = false;
};

class Headers final : public Middleware {
 public:
  explicit Headers(HeadersConfig c) : c_(std::move(c)) {}

  std::optional<Answer> OnRequest(Exchange& x) const override {
    if (c_.has_cors) {
      std::string_view method = GetHeader(x.headers, "Access-Control-Request-Method");
      std::string_view origin = GetHeader(x.headers, "Origin");
      if (!method.empty() && !origin.empty() && x.method == "OPTIONS") return Preflight(x, method, origin);
    }
    if (c_.has_custom) ModifyRequest(x);
    if (c_.has_secure && !c_.allowed_hosts.empty() && !c_.is_development) {
      std::string host = x.host;
      for (const std::string& h : c_.hosts_proxy_headers) {
        if (std::string_view v = GetHeader(x.headers, h); !v.empty()) {
          host = std::string(v);
          break;
        }
      }
      const bool good = std::any_of(c_.allowed_hosts.begin(), c_.allowed_hosts.end(),
                                    [&](const std::string& a) { return HeaderNameEquals(a, host); });
      if (!good) {
        // Written through the custom/CORS half's response writer, not the secure half's.
        Answer a = HttpError(500, "Bad Host");
        ModifyResponse(x, a.headers);
        return a;
      }
    }
    return std::nullopt;
  }

  void OnResponse(const Exchange& x, int /*status*/, HeaderList& headers) const override {
    if (c_.has_secure) AddSecurityHeaders(x, headers);
    ModifyResponse(x, headers);
  }

 private:
  void ModifyRequest(Exchange& x) const {
    for (const auto& [name, value] : c_.custom_request) {
      if (value.empty() && name == "X-Forwarded-For") {
        DelHeader(x.headers, name);
        x.omit_x_forwarded_for = true;
      } else if (value.empty()) {
        DelHeader(x.headers, name);
      } else if (HeaderNameEquals(name, "Host")) {
        x.host = value;
      } else {
        SetHeader(x.headers, name, value);
      }
    }
  }

  std::optional<std::string> MatchOrigin(std::string_view origin) const {
    for (const std::string& item : c_.allow_origins) {
      if (item == origin) return item;
      if (item == "*") return c_.allow_credentials ? std::string(origin) : item;
    }
    for (const auto& re : c_.allow_origin_regexes) {
      if (RegexMatches(*re, origin)) return std::string(origin);
    }
    return std::nullopt;
  }

  void SetExposeHeaders(HeaderList& headers) const {
    if (!c_.expose_headers.empty() && !(Contains(c_.expose_headers, "*") && c_.allow_credentials)) {
      SetHeader(headers, "Access-Control-Expose-Headers", Join(c_.expose_headers));
    }
  }

  Answer Preflight(const Exchange& x, std::string_view method, std::string_view origin) const {
    Answer a;
    a.status = 200;
    if (c_.allow_credentials) SetHeader(a.headers, "Access-Control-Allow-Credentials", "true");
    if (Contains(c_.allow_headers, "*") && c_.allow_credentials) {
      if (std::string_view requested = GetHeader(x.headers, "Access-Control-Request-Headers"); !requested.empty()) {
        SetHeader(a.headers, "Access-Control-Allow-Headers", std::string(requested));
      }
    } else if (!c_.allow_headers.empty()) {
      SetHeader(a.headers, "Access-Control-Allow-Headers", Join(c_.allow_headers));
    }
    if (Contains(c_.allow_methods, "*") && c_.allow_credentials) {
      SetHeader(a.headers, "Access-Control-Allow-Methods", std::string(method));
    } else if (!c_.allow_methods.empty()) {
      SetHeader(a.headers, "Access-Control-Allow-Methods", Join(c_.allow_methods));
    }
    if (std::optional<std::string> match = MatchOrigin(origin)) {
      SetHeader(a.headers, "Access-Control-Allow-Origin", *match);
    }
    if (c_.max_age) SetHeader(a.headers, "Access-Control-Max-Age", std::to_string(*c_.max_age));
    SetExposeHeaders(a.headers);
    return a;
  }

  void ModifyResponse(const Exchange& x, HeaderList& headers) const {
    for (const auto& [name, value] : c_.custom_response) {
      if (value.empty()) {
        DelHeader(headers, name);
      } else {
        SetHeader(headers, name, value);
      }
    }
    if (std::optional<std::string> match = MatchOrigin(GetHeader(x.headers, "Origin"))) {
      SetHeader(headers, "Access-Control-Allow-Origin", *match);
    }
    if (c_.allow_credentials) SetHeader(headers, "Access-Control-Allow-Credentials", "true");
    SetExposeHeaders(headers);
    if (!c_.add_vary) return;
    std::string vary(GetHeader(headers, "Vary"));
    if (vary == "Origin") return;
    if (!vary.empty()) vary += ',';
    vary += "Origin";
    SetHeader(headers, "Vary", vary);
  }

  bool IsSsl(const Exchange& x) const {
    if (x.scheme == "https") return true;
    return std::any_of(c_.ssl_proxy_headers.begin(), c_.ssl_proxy_headers.end(),
                       [&](const auto& h) { return GetHeader(x.headers, h.first) == h.second; });
  }

  void AddSecurityHeaders(const Exchange& x, HeaderList& headers) const {
    const bool ssl = IsSsl(x);
    if (c_.sts_seconds != 0 && (ssl || c_.force_sts) && !c_.is_development) {
      std::string sts = fmt::format("max-age={}", c_.sts_seconds);
      if (c_.sts_include_subdomains) sts += "; includeSubDomains";
      if (c_.sts_preload) sts += "; preload";
      SetHeader(headers, "Strict-Transport-Security", sts);
    }
    if (!c_.custom_frame_options.empty()) {
      SetHeader(headers, "X-Frame-Options", c_.custom_frame_options);
    } else if (c_.frame_deny) {
      SetHeader(headers, "X-Frame-Options", "DENY");
    }
    if (c_.content_type_nosniff) SetHeader(headers, "X-Content-Type-Options", "nosniff");
    if (!c_.custom_browser_xss.empty()) {
      SetHeader(headers, "X-XSS-Protection", c_.custom_browser_xss);
    } else if (c_.browser_xss_filter) {
      SetHeader(headers, "X-XSS-Protection", "1; mode=block");
    }
    if (!c_.public_key.empty() && ssl && !c_.is_development) SetHeader(headers, "Public-Key-Pins", c_.public_key);
    if (!c_.content_security_policy.empty()) {
      SetHeader(headers, "Content-Security-Policy", c_.content_security_policy);
    }
    if (!c_.content_security_policy_report_only.empty()) {
      SetHeader(headers, "Content-Security-Policy-Report-Only", c_.content_security_policy_report_only);
    }
    if (!c_.referrer_policy.empty()) SetHeader(headers, "Referrer-Policy", c_.referrer_policy);
    if (!c_.permissions_policy.empty()) SetHeader(headers, "Permissions-Policy", c_.permissions_policy);
  }

  HeadersConfig c_;
};

}  // namespace

StatusOr<std::shared_ptr<const Middleware>> BuildHeaders(const boost::json::value& config) {
  Options o("headers", config,
            {"customRequestHeaders", "customResponseHeaders", "accessControlAllowCredentials",
             "accessControlAllowHeaders", "accessControlAllowMethods", "accessControlAllowOriginList",
             "accessControlAllowOriginListRegex", "accessControlExposeHeaders", "accessControlMaxAge", "addVaryHeader",
             "allowedHosts", "hostsProxyHeaders", "sslProxyHeaders", "stsSeconds", "stsIncludeSubdomains", "stsPreload",
             "forceSTSHeader", "frameDeny", "customFrameOptionsValue", "contentTypeNosniff", "browserXssFilter",
             "customBrowserXSSValue", "contentSecurityPolicy", "contentSecurityPolicyReportOnly", "publicKey",
             "referrerPolicy", "permissionsPolicy", "isDevelopment", "featurePolicy", "sslRedirect",
             "sslTemporaryRedirect", "sslHost", "sslForceHost"});
  HeadersConfig c;
  c.custom_request = o.StringMap("customRequestHeaders");
  c.custom_response = o.StringMap("customResponseHeaders");
  c.allow_credentials = o.Bool("accessControlAllowCredentials");
  c.allow_headers = o.Strings("accessControlAllowHeaders");
  c.allow_methods = o.Strings("accessControlAllowMethods");
  c.allow_origins = o.Strings("accessControlAllowOriginList");
  const std::vector<std::string> origin_patterns = o.Strings("accessControlAllowOriginListRegex");
  c.expose_headers = o.Strings("accessControlExposeHeaders");
  c.max_age = o.Int("accessControlMaxAge");
  c.add_vary = o.Bool("addVaryHeader");
  c.allowed_hosts = o.Strings("allowedHosts");
  c.hosts_proxy_headers = o.Strings("hostsProxyHeaders");
  c.ssl_proxy_headers = o.StringMap("sslProxyHeaders");
  const std::optional<int64_t> sts_seconds = o.Int("stsSeconds");
  c.sts_seconds = sts_seconds.value_or(0);
  c.sts_include_subdomains = o.Bool("stsIncludeSubdomains");
  c.sts_preload = o.Bool("stsPreload");
  c.force_sts = o.Bool("forceSTSHeader");
  c.frame_deny = o.Bool("frameDeny");
  c.custom_frame_options = o.String("customFrameOptionsValue");
  c.content_type_nosniff = o.Bool("contentTypeNosniff");
  c.browser_xss_filter = o.Bool("browserXssFilter");
  c.custom_browser_xss = o.String("customBrowserXSSValue");
  c.content_security_policy = o.String("contentSecurityPolicy");
  c.content_security_policy_report_only = o.String("contentSecurityPolicyReportOnly");
  c.public_key = o.String("publicKey");
  c.referrer_policy = o.String("referrerPolicy");
  c.permissions_policy = o.String("permissionsPolicy");
  c.is_development = o.Bool("isDevelopment");
  // Accepted and without effect, as in Traefik v3 (deprecated; it no longer passes them on).
  const std::string feature_policy = o.String("featurePolicy");
  const bool ssl_redirect = o.Bool("sslRedirect");
  const bool ssl_temporary_redirect = o.Bool("sslTemporaryRedirect");
  const std::string ssl_host = o.String("sslHost");
  const bool ssl_force_host = o.Bool("sslForceHost");
  RETURN_IF_ERROR(o.status());

  for (const std::string& pattern : origin_patterns) {
    StatusOr<std::shared_ptr<const re2::RE2>> re = CompileRegex(pattern);
    if (!re.ok()) return InvalidArgument("headers: error occurred during origin parsing: " + re.status().message());
    c.allow_origin_regexes.push_back(*std::move(re));
  }

  c.has_custom = !c.custom_request.empty() || !c.custom_response.empty();
  c.has_cors = c.allow_credentials || !c.allow_headers.empty() || !c.allow_methods.empty() ||
               !c.allow_origins.empty() || !origin_patterns.empty() || !c.expose_headers.empty() ||
               c.max_age.has_value() || c.add_vary;
  c.has_secure = !c.allowed_hosts.empty() || !c.hosts_proxy_headers.empty() || ssl_redirect ||
                 ssl_temporary_redirect || ssl_force_host || !ssl_host.empty() || !c.ssl_proxy_headers.empty() ||
                 sts_seconds.has_value() || c.sts_include_subdomains || c.sts_preload || c.force_sts ||
                 c.frame_deny || !c.custom_frame_options.empty() || c.content_type_nosniff ||
                 c.browser_xss_filter || !c.custom_browser_xss.empty() || !c.content_security_policy.empty() ||
                 !c.content_security_policy_report_only.empty() || !c.public_key.empty() ||
                 !c.referrer_policy.empty() || !feature_policy.empty() || !c.permissions_policy.empty() ||
                 c.is_development;
  if (!c.has_custom && !c.has_cors && !c.has_secure) return InvalidArgument("headers: headers configuration not valid");
  return std::shared_ptr<const Middleware>(std::make_shared<Headers>(std::move(c)));
}

}  // namespace paddock::edge::mw
