#include <fmt/format.h>

#include "aws/service.h"

namespace paddock::aws {

std::optional<std::string_view> FindParam(const QueryParams& params, std::string_view name) {
  for (const auto& [k, v] : params)
    if (k == name) return std::string_view(v);
  return std::nullopt;
}

std::string XmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        // XML 1.0 cannot carry C0 controls other than tab, LF and CR, even escaped.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r') {
          out += '?';
        } else {
          out += c;
        }
    }
  }
  return out;
}

std::string QueryErrorXml(std::string_view code, std::string_view message, std::string_view request_id,
                          bool server_fault) {
  return fmt::format(
      "<ErrorResponse><Error><Type>{}</Type><Code>{}</Code><Message>{}</Message></Error><RequestId>{}</RequestId>"
      "</ErrorResponse>",
      server_fault ? "Receiver" : "Sender", XmlEscape(code), XmlEscape(message), XmlEscape(request_id));
}

std::string QueryService::ErrorXml(std::string_view code, std::string_view message,
                                   std::string_view request_id) const {
  return QueryErrorXml(code, message, request_id, /*server_fault=*/code == "InternalFailure" || code == "ServiceUnavailable");
}

}  // namespace paddock::aws
