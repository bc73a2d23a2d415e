// Early returns for absl::Status and absl::StatusOr, defined once for every
// layer (errors are values: each fallible call either yields its value or
// hands its status, unchanged, to the caller).
//
//   SS_ASSIGN_OR_RETURN(plan, MakePlan(graph));   // declares `plan`
//   SS_RETURN_IF_ERROR(Validate(plan));
#ifndef SHAPESHIFT_BASE_STATUS_MACROS_H_
#define SHAPESHIFT_BASE_STATUS_MACROS_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define SS_ASSIGN_OR_RETURN(lhs, expr)          \
  auto lhs##_or = (expr);                       \
  if (!lhs##_or.ok()) return lhs##_or.status(); \
  auto lhs = *std::move(lhs##_or)

#define SS_RETURN_IF_ERROR(expr)       \
  do {                                 \
    absl::Status status_ = (expr);     \
    if (!status_.ok()) return status_; \
  } while (false)

#endif  // SHAPESHIFT_BASE_STATUS_MACROS_H_
