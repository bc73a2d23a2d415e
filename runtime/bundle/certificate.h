// CoverageCertificate: Z3's answer to "do these entries' guard sets cover the
// declared domain?", with everything needed to ask it again — the solver's
// version, the domain and guard sets as text, and the exact SMT-LIB 2 query.
//
// Why a certificate and not a flag: a bundle claims "this file serves every
// shape in the domain without compiling". The claim is only as good as the
// question asked; recording the question lets `shapeshift prove --bundle`
// (or anyone with Z3) re-ask it, and lets the loader check that the question
// is about the guards the bundle's entries really check (re-created at load
// by the same compile, see manifest.h) rather than about text someone edited.
#ifndef SHAPESHIFT_RUNTIME_BUNDLE_CERTIFICATE_H_
#define SHAPESHIFT_RUNTIME_BUNDLE_CERTIFICATE_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "shapes/predicate.h"

namespace shapeshift::runtime::bundle {

struct CoverageCertificate {
  std::string verdict;  // "covered", "uncovered" or "unknown"
  std::map<std::string, int64_t> witness;  // uncovered: a shape no entry serves
  std::string detail;                      // unknown: why
  std::string solver;                      // Z3VersionString()
  std::string domain;                      // the declared domain, as predicate text
  std::vector<std::vector<std::string>> guard_sets;  // per entry, its atoms as text
  std::string query;                       // the SMT-LIB 2 text asked (unsat = covered)
};

// Asks Z3 (a fresh solver, so the query text depends only on the inputs).
CoverageCertificate CertifyCoverage(const Predicate& domain, const std::vector<std::vector<Predicate>>& guard_sets);

nlohmann::json CertificateToJson(const CoverageCertificate& c);
absl::StatusOr<CoverageCertificate> CertificateFromJson(const nlohmann::json& j);

// Re-asks the question for `domain` and `guard_sets` (the guards in force)
// and compares with `recorded`: the domain and guard sets must be the ones
// certified, the verdict (and witness) the same, and — with the same solver
// version — the query text identical. An error names the first difference.
absl::Status RecheckCertificate(const CoverageCertificate& recorded, const Predicate& domain,
                                const std::vector<std::vector<Predicate>>& guard_sets);

// The text guard sets parsed back into predicates (errors name the atom).
absl::StatusOr<std::vector<std::vector<Predicate>>> ParseGuardSets(const std::vector<std::vector<std::string>>& sets);

}  // namespace shapeshift::runtime::bundle

#endif  // SHAPESHIFT_RUNTIME_BUNDLE_CERTIFICATE_H_
