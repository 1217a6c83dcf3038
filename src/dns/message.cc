#include "dns/message.h"

#include <algorithm>
#include <cctype>
#include <utility>

namespace paddock::dns {
namespace {

// Reads from an untrusted buffer; every accessor checks bounds first.
class Reader {
 public:
  explicit Reader(std::string_view wire) : wire_(wire) {}

  size_t pos() const { return pos_; }
  size_t size() const { return wire_.size(); }
  bool Has(size_t n) const { return n <= wire_.size() - pos_; }

  bool U8(uint8_t& v) {
    if (!Has(1)) return false;
    v = static_cast<uint8_t>(wire_[pos_++]);
    return true;
  }
  bool U16(uint16_t& v) {
    if (!Has(2)) return false;
    v = static_cast<uint16_t>(At(pos_) << 8 | At(pos_ + 1));
    pos_ += 2;
    return true;
  }
  bool U32(uint32_t& v) {
    if (!Has(4)) return false;
    v = static_cast<uint32_t>(At(pos_)) << 24 | static_cast<uint32_t>(At(pos_ + 1)) << 16 |
        static_cast<uint32_t>(At(pos_ + 2)) << 8 | At(pos_ + 3);
    pos_ += 4;
    return true;
  }
  bool Bytes(size_t n, std::string_view& out) {
    if (!Has(n)) return false;
    out = wire_.substr(pos_, n);
    pos_ += n;
    return true;
  }

  // A domain name at the current position, following compression pointers. Each pointer must
  // point strictly before the previous one's target (before the name's start, for the first), so
  // a chain of pointers always ends; the expanded name is at most 255 octets.
  bool Name(std::string& out) {
    out.clear();
    size_t at = pos_;
    size_t bound = pos_;  // a pointer must point below this
    bool jumped = false;
    size_t wire_octets = 1;  // the root label
    for (;;) {
      if (at >= wire_.size()) return false;
      uint8_t len = At(at);
      if ((len & 0xC0) == 0xC0) {
        if (at + 1 >= wire_.size()) return false;
        size_t target = static_cast<size_t>(len & 0x3F) << 8 | At(at + 1);
        if (target >= bound) return false;
        if (!jumped) pos_ = at + 2;
        jumped = true;
        bound = target;
        at = target;
        continue;
      }
      if ((len & 0xC0) != 0) return false;  // 0x40, 0x80: obsolete or unassigned label types
      if (len == 0) {
        if (!jumped) pos_ = at + 1;
        return true;
      }
      if (at + 1 + len > wire_.size()) return false;
      wire_octets += 1 + len;
      if (wire_octets > kMaxNameOctets) return false;
      if (!out.empty()) out.push_back('.');
      AppendLabel(wire_.substr(at + 1, len), out);
      at += 1 + len;
    }
  }

 private:
  uint8_t At(size_t i) const { return static_cast<uint8_t>(wire_[i]); }

  static void AppendLabel(std::string_view label, std::string& out) {
    for (char c : label) {
      auto u = static_cast<uint8_t>(c);
      if (c == '.' || c == '\\') {
        out.push_back('\\');
        out.push_back(c);
      } else if (u < 0x21 || u > 0x7e) {
        out.push_back('\\');
        out.push_back(static_cast<char>('0' + u / 100));
        out.push_back(static_cast<char>('0' + u / 10 % 10));
        out.push_back(static_cast<char>('0' + u % 10));
      } else {
        out.push_back(c);
      }
    }
  }

  std::string_view wire_;
  size_t pos_ = 0;
};

// `name` without its trailing dot, if it has one: a final "." that is not escaped (a\. ends in an
// escaped dot, part of its label; a\\. in an escaped backslash and a trailing dot).
std::string_view WithoutTrailingDot(std::string_view name) {
  if (name.empty() || name.back() != '.') return name;
  size_t backslashes = 0;
  for (size_t i = name.size() - 1; i > 0 && name[i - 1] == '\\'; --i) ++backslashes;
  if (backslashes % 2 == 1) return name;
  name.remove_suffix(1);
  return name;
}

Status Malformed(std::string_view what) { return InvalidArgument("malformed DNS message: " + std::string(what)); }

Status ParseRdata(Reader& r, uint16_t type, uint16_t rdlength, Rdata& out) {
  size_t end = r.pos() + rdlength;
  if (!r.Has(rdlength)) return Malformed("RDATA runs past the end");
  auto done = [&]() -> Status { return r.pos() == end ? OkStatus() : Malformed("RDATA length does not match"); };
  switch (static_cast<RrType>(type)) {
    case RrType::kA: {
      if (rdlength != 4) return Malformed("A RDATA is not 4 octets");
      std::string_view b;
      r.Bytes(4, b);
      A a;
      std::copy(b.begin(), b.end(), a.address.begin());
      out = a;
      return OkStatus();
    }
    case RrType::kAaaa: {
      if (rdlength != 16) return Malformed("AAAA RDATA is not 16 octets");
      std::string_view b;
      r.Bytes(16, b);
      Aaaa a;
      std::copy(b.begin(), b.end(), a.address.begin());
      out = a;
      return OkStatus();
    }
    case RrType::kCname:
    case RrType::kNs:
    case RrType::kPtr: {
      NameData n;
      if (!r.Name(n.name) || r.pos() > end) return Malformed("bad name in RDATA");
      out = std::move(n);
      return done();
    }
    case RrType::kSrv: {
      Srv s;
      if (rdlength < 7 || !r.U16(s.priority) || !r.U16(s.weight) || !r.U16(s.port) || !r.Name(s.target) ||
          r.pos() > end) {
        return Malformed("bad SRV RDATA");
      }
      out = std::move(s);
      return done();
    }
    case RrType::kSoa: {
      Soa s;
      if (!r.Name(s.mname) || r.pos() > end || !r.Name(s.rname) || r.pos() > end || end - r.pos() != 20) {
        return Malformed("bad SOA RDATA");
      }
      r.U32(s.serial);
      r.U32(s.refresh);
      r.U32(s.retry);
      r.U32(s.expire);
      r.U32(s.minimum);
      out = std::move(s);
      return OkStatus();
    }
    default: {
      std::string_view b;
      r.Bytes(rdlength, b);
      out = Raw{std::string(b)};
      return OkStatus();
    }
  }
}

Header UnpackHeader(uint16_t id, uint16_t flags) {
  Header h;
  h.id = id;
  h.qr = flags & 0x8000;
  h.opcode = static_cast<uint8_t>(flags >> 11 & 0xF);
  h.aa = flags & 0x0400;
  h.tc = flags & 0x0200;
  h.rd = flags & 0x0100;
  h.ra = flags & 0x0080;
  h.ad = flags & 0x0020;
  h.cd = flags & 0x0010;
  h.rcode = static_cast<Rcode>(flags & 0xF);
  return h;
}

uint16_t PackFlags(const Header& h) {
  return static_cast<uint16_t>((h.qr ? 0x8000 : 0) | (h.opcode & 0xF) << 11 | (h.aa ? 0x0400 : 0) |
                               (h.tc ? 0x0200 : 0) | (h.rd ? 0x0100 : 0) | (h.ra ? 0x0080 : 0) |
                               (h.ad ? 0x0020 : 0) | (h.cd ? 0x0010 : 0) | (static_cast<uint8_t>(h.rcode) & 0xF));
}

// A presentation-form name in wire form (labels, then the root), or false if it is not a valid
// name.
bool NameToWire(std::string_view name, std::string& out) {
  out.clear();
  name = WithoutTrailingDot(name);
  if (name.empty()) {
    out.push_back('\0');
    return true;
  }
  size_t label_at = 0;
  out.push_back('\0');
  for (size_t i = 0; i <= name.size(); ++i) {
    if (i == name.size() || name[i] == '.') {
      size_t len = out.size() - label_at - 1;
      if (len == 0 || len > kMaxLabelOctets) return false;
      out[label_at] = static_cast<char>(len);
      if (i == name.size()) break;
      label_at = out.size();
      out.push_back('\0');
      continue;
    }
    char c = name[i];
    if (c == '\\') {
      if (i + 1 >= name.size()) return false;
      char e = name[i + 1];
      if (e >= '0' && e <= '9') {
        if (i + 3 >= name.size() || !std::isdigit(static_cast<unsigned char>(name[i + 2])) ||
            !std::isdigit(static_cast<unsigned char>(name[i + 3]))) {
          return false;
        }
        int v = (e - '0') * 100 + (name[i + 2] - '0') * 10 + (name[i + 3] - '0');
        if (v > 255) return false;
        c = static_cast<char>(v);
        i += 3;
      } else {
        c = e;
        i += 1;
      }
    }
    out.push_back(c);
  }
  out.push_back('\0');
  return out.size() <= kMaxNameOctets;
}

class Writer {
 public:
  std::string& out() { return out_; }

  void U8(uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void U16(uint16_t v) {
    out_.push_back(static_cast<char>(v >> 8));
    out_.push_back(static_cast<char>(v & 0xFF));
  }
  void U32(uint32_t v) {
    U16(static_cast<uint16_t>(v >> 16));
    U16(static_cast<uint16_t>(v & 0xFFFF));
  }
  void Put16(size_t at, uint16_t v) {
    out_[at] = static_cast<char>(v >> 8);
    out_[at + 1] = static_cast<char>(v & 0xFF);
  }

  // Writes `name`, pointing at an earlier copy of its longest known suffix when `compress`.
  // Suffixes match octet for octet: names that differ only in case keep their own case
  // (RFC 4343 asks servers to preserve it; `dig` shows it).
  bool Name(std::string_view name, bool compress) {
    if (!NameToWire(name, wire_)) return false;
    size_t at = 0;
    while (wire_[at] != 0) {
      std::string_view suffix = std::string_view(wire_).substr(at);
      if (compress) {
        for (const auto& [key, offset] : table_) {
          if (key == suffix) {
            U16(static_cast<uint16_t>(0xC000 | offset));
            return true;
          }
        }
      }
      size_t here = out_.size();
      if (here < 0x4000) table_.emplace_back(std::string(suffix), static_cast<uint16_t>(here));
      size_t len = static_cast<uint8_t>(wire_[at]);
      out_.append(wire_, at, len + 1);
      at += len + 1;
    }
    U8(0);
    return true;
  }

  // For undoing a record that did not fit: the output and the names it added to the table.
  std::pair<size_t, size_t> Mark() const { return {out_.size(), table_.size()}; }
  void Rewind(std::pair<size_t, size_t> mark) {
    out_.resize(mark.first);
    table_.resize(mark.second);
  }

 private:
  std::string out_;
  std::string wire_;  // scratch
  std::vector<std::pair<std::string, uint16_t>> table_;  // wire suffix -> offset
};

bool WriteRdata(Writer& w, const Rdata& data) {
  return std::visit(
      [&](const auto& d) -> bool {
        using T = std::decay_t<decltype(d)>;
        if constexpr (std::is_same_v<T, A> || std::is_same_v<T, Aaaa>) {
          w.out().append(reinterpret_cast<const char*>(d.address.data()), d.address.size());
          return true;
        } else if constexpr (std::is_same_v<T, NameData>) {
          return w.Name(d.name, true);
        } else if constexpr (std::is_same_v<T, Srv>) {
          w.U16(d.priority);
          w.U16(d.weight);
          w.U16(d.port);
          return w.Name(d.target, false);  // RFC 2782: the target is never compressed
        } else if constexpr (std::is_same_v<T, Soa>) {
          if (!w.Name(d.mname, true) || !w.Name(d.rname, true)) return false;
          w.U32(d.serial);
          w.U32(d.refresh);
          w.U32(d.retry);
          w.U32(d.expire);
          w.U32(d.minimum);
          return true;
        } else {
          w.out().append(d.bytes);
          return true;
        }
      },
      data);
}

bool WriteRecord(Writer& w, const Record& r) {
  if (!w.Name(r.name, true)) return false;
  w.U16(r.type);
  w.U16(r.klass);
  w.U32(r.ttl);
  size_t rdlength_at = w.out().size();
  w.U16(0);
  if (!WriteRdata(w, r.data)) return false;
  size_t rdlength = w.out().size() - rdlength_at - 2;
  if (rdlength > 0xFFFF) return false;
  w.Put16(rdlength_at, static_cast<uint16_t>(rdlength));
  return true;
}

constexpr size_t kOptSize = 11;  // root name, type, class, TTL, RDLENGTH 0

}  // namespace

StatusOr<Header> ParseHeader(std::string_view wire) {
  Reader r(wire);
  uint16_t id, flags;
  if (wire.size() < kHeaderSize || !r.U16(id) || !r.U16(flags)) return Malformed("shorter than a header");
  return UnpackHeader(id, flags);
}

StatusOr<Message> Parse(std::string_view wire) {
  Reader r(wire);
  uint16_t id, flags, qd, an, ns, ar;
  if (!r.U16(id) || !r.U16(flags) || !r.U16(qd) || !r.U16(an) || !r.U16(ns) || !r.U16(ar)) {
    return Malformed("shorter than a header");
  }
  // Each question takes at least 5 octets and each record 11: counts the bytes cannot hold are
  // refused before anything is reserved for them.
  size_t rest = wire.size() - kHeaderSize;
  if (size_t{qd} * 5 + (size_t{an} + ns + ar) * 11 > rest) return Malformed("counts exceed the message");
  Message m;
  m.header = UnpackHeader(id, flags);
  m.questions.resize(qd);
  for (Question& q : m.questions) {
    if (!r.Name(q.name) || !r.U16(q.type) || !r.U16(q.klass)) return Malformed("bad question");
  }
  auto section = [&](uint16_t count, std::vector<Record>& out, bool additional) -> Status {
    out.reserve(count);
    for (uint16_t i = 0; i < count; ++i) {
      Record rec;
      uint16_t rdlength;
      if (!r.Name(rec.name) || !r.U16(rec.type) || !r.U16(rec.klass) || !r.U32(rec.ttl) || !r.U16(rdlength)) {
        return Malformed("bad resource record");
      }
      if (rec.type == static_cast<uint16_t>(RrType::kOpt)) {
        if (!additional || m.edns || !rec.name.empty()) return Malformed("misplaced OPT record");
        std::string_view options;
        if (!r.Bytes(rdlength, options)) return Malformed("OPT RDATA runs past the end");
        Edns e;
        e.udp_size = rec.klass;
        e.extended_rcode = static_cast<uint8_t>(rec.ttl >> 24);
        e.version = static_cast<uint8_t>(rec.ttl >> 16 & 0xFF);
        e.dnssec_ok = rec.ttl & 0x8000;
        m.edns = e;
        continue;
      }
      RETURN_IF_ERROR(ParseRdata(r, rec.type, rdlength, rec.data));
      out.push_back(std::move(rec));
    }
    return OkStatus();
  };
  RETURN_IF_ERROR(section(an, m.answers, false));
  RETURN_IF_ERROR(section(ns, m.authority, false));
  RETURN_IF_ERROR(section(ar, m.additional, true));
  if (r.pos() != wire.size()) return Malformed("trailing bytes after the last record");
  return m;
}

StatusOr<std::string> Encode(const Message& message, size_t max_size) {
  max_size = std::min<size_t>(max_size, 65535);
  Writer w;
  w.out().reserve(std::min<size_t>(max_size, 512));
  if (message.questions.size() > 0xFFFF) return InvalidArgument("too many questions");
  Header h = message.header;
  w.U16(h.id);
  size_t flags_at = w.out().size();
  w.U16(0);
  w.U16(static_cast<uint16_t>(message.questions.size()));
  size_t counts_at = w.out().size();
  w.U16(0);
  w.U16(0);
  w.U16(0);
  for (const Question& q : message.questions) {
    if (!w.Name(q.name, true)) return InvalidArgument("not a valid domain name: " + q.name);
    w.U16(q.type);
    w.U16(q.klass);
  }
  size_t reserve = message.edns ? kOptSize : 0;
  if (w.out().size() + reserve > max_size) return InvalidArgument("the question does not fit in the size limit");
  size_t limit = max_size - reserve;
  std::array<uint16_t, 3> counts{};
  const std::vector<Record>* sections[] = {&message.answers, &message.authority, &message.additional};
  bool full = false;
  for (int s = 0; s < 3 && !full; ++s) {
    if (sections[s]->size() > 0xFFFF) return InvalidArgument("too many records");
    for (const Record& rec : *sections[s]) {
      auto mark = w.Mark();
      if (!WriteRecord(w, rec)) return InvalidArgument("not a valid record for " + rec.name);
      if (w.out().size() > limit) {
        w.Rewind(mark);
        if (s < 2) h.tc = true;  // RFC 2181 §9: dropping additional data alone is not truncation
        full = true;
        break;
      }
      ++counts[s];
    }
  }
  uint16_t arcount = counts[2];
  if (message.edns) {
    const Edns& e = *message.edns;
    w.U8(0);
    w.U16(static_cast<uint16_t>(RrType::kOpt));
    w.U16(std::max<uint16_t>(e.udp_size, kClassicUdpSize));
    w.U32(static_cast<uint32_t>(e.extended_rcode) << 24 | static_cast<uint32_t>(e.version) << 16 |
          (e.dnssec_ok ? 0x8000u : 0u));
    w.U16(0);
    ++arcount;
  }
  w.Put16(flags_at, PackFlags(h));
  w.Put16(counts_at, counts[0]);
  w.Put16(counts_at + 2, counts[1]);
  w.Put16(counts_at + 4, arcount);
  return std::move(w.out());
}

Message ReplyTo(const Message& query, uint16_t udp_size) {
  Message m;
  m.header.id = query.header.id;
  m.header.opcode = query.header.opcode;
  m.header.rd = query.header.rd;
  m.header.cd = query.header.cd;
  m.header.qr = true;
  m.header.ra = true;
  m.questions = query.questions;
  if (query.edns) m.edns = Edns{.udp_size = udp_size};
  return m;
}

std::string NormalizeName(std::string_view name) {
  std::string out(WithoutTrailingDot(name));
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

bool EqualNames(std::string_view a, std::string_view b) { return NormalizeName(a) == NormalizeName(b); }

}  // namespace paddock::dns
