#include "runtime/bundle/certificate.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "shapes/z3_bridge.h"

namespace shapeshift::runtime::bundle {
namespace {

constexpr unsigned kCertificateTimeoutMs = 20000;

std::string CertificateVerdict(Verdict v) {
  switch (v) {
    case Verdict::kProven:
      return "covered";
    case Verdict::kRefuted:
      return "uncovered";
    case Verdict::kUnknown:
      break;
  }
  return "unknown";
}

std::vector<std::vector<std::string>> Texts(const std::vector<std::vector<Predicate>>& sets) {
  std::vector<std::vector<std::string>> out;
  for (const std::vector<Predicate>& set : sets) {
    std::vector<std::string> atoms;
    for (const Predicate& p : set) atoms.push_back(p.ToString());
    out.push_back(std::move(atoms));
  }
  return out;
}

std::string SetsText(const std::vector<std::vector<std::string>>& sets) {
  std::vector<std::string> parts;
  for (const auto& set : sets) parts.push_back(absl::StrCat("[", absl::StrJoin(set, " && "), "]"));
  return absl::StrJoin(parts, ", ");
}

}  // namespace

CoverageCertificate CertifyCoverage(const Predicate& domain, const std::vector<std::vector<Predicate>>& guard_sets) {
  Z3Bridge z3(kCertificateTimeoutMs);
  const CoverageResult r = z3.Coverage(domain, guard_sets);
  CoverageCertificate c;
  c.verdict = CertificateVerdict(r.verdict);
  if (r.verdict == Verdict::kRefuted) c.witness = std::map<std::string, int64_t>(r.witness.begin(), r.witness.end());
  c.detail = r.detail;
  c.solver = Z3VersionString();
  c.domain = domain.ToString();
  c.guard_sets = Texts(guard_sets);
  c.query = r.query;
  return c;
}

nlohmann::json CertificateToJson(const CoverageCertificate& c) {
  return nlohmann::json{{"verdict", c.verdict}, {"witness", c.witness}, {"detail", c.detail},
                        {"solver", c.solver},   {"domain", c.domain},   {"guard_sets", c.guard_sets},
                        {"query", c.query}};
}

absl::StatusOr<CoverageCertificate> CertificateFromJson(const nlohmann::json& j) {
  try {
    CoverageCertificate c;
    c.verdict = j.at("verdict").get<std::string>();
    c.witness = j.at("witness").get<std::map<std::string, int64_t>>();
    c.detail = j.at("detail").get<std::string>();
    c.solver = j.at("solver").get<std::string>();
    c.domain = j.at("domain").get<std::string>();
    c.guard_sets = j.at("guard_sets").get<std::vector<std::vector<std::string>>>();
    c.query = j.at("query").get<std::string>();
    if (c.verdict != "covered" && c.verdict != "uncovered" && c.verdict != "unknown") {
      return absl::InvalidArgumentError(absl::StrCat("certificate verdict '", c.verdict, "'"));
    }
    return c;
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("malformed certificate: ", e.what()));
  }
}

absl::Status RecheckCertificate(const CoverageCertificate& recorded, const Predicate& domain,
                                const std::vector<std::vector<Predicate>>& guard_sets) {
  const CoverageCertificate now = CertifyCoverage(domain, guard_sets);
  if (now.domain != recorded.domain) {
    return absl::FailedPreconditionError(
        absl::StrCat("the certificate is for the domain ", recorded.domain, ", the bundle declares ", now.domain));
  }
  if (now.guard_sets != recorded.guard_sets) {
    return absl::FailedPreconditionError(absl::StrCat("the certificate is about the guard sets ",
                                                      SetsText(recorded.guard_sets), ", the entries check ",
                                                      SetsText(now.guard_sets)));
  }
  if (now.verdict != recorded.verdict || now.witness != recorded.witness) {
    return absl::FailedPreconditionError(absl::StrCat("the certificate says '", recorded.verdict, "', ", now.solver,
                                                      " answers '", now.verdict, "'",
                                                      now.detail.empty() ? "" : absl::StrCat(" (", now.detail, ")")));
  }
  if (now.solver == recorded.solver && now.query != recorded.query) {
    return absl::FailedPreconditionError("the recorded query differs from the one asked for these guard sets");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::vector<Predicate>>> ParseGuardSets(const std::vector<std::vector<std::string>>& sets) {
  std::vector<std::vector<Predicate>> out;
  for (const auto& set : sets) {
    std::vector<Predicate> atoms;
    for (const std::string& text : set) {
      absl::StatusOr<Predicate> p = ParsePredicate(text);
      if (!p.ok()) return absl::InvalidArgumentError(absl::StrCat("guard '", text, "': ", p.status().message()));
      atoms.push_back(*std::move(p));
    }
    out.push_back(std::move(atoms));
  }
  return out;
}

}  // namespace shapeshift::runtime::bundle
