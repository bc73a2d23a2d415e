// Text pieces of the kernel IR printer, shared by Print() and by Verify()'s
// error messages (which quote the offending statement).
#ifndef SHAPESHIFT_CODEGEN_KERNEL_PRINT_H_
#define SHAPESHIFT_CODEGEN_KERNEL_PRINT_H_

#include <string>

#include "codegen/kernel_ir.h"

namespace shapeshift::codegen {

std::string PrintValue(const Kernel& kernel, const Value& value);
// The statement's own line (a loop's header, without its body).
std::string PrintStmtLine(const Kernel& kernel, const Stmt& stmt);

}  // namespace shapeshift::codegen

#endif  // SHAPESHIFT_CODEGEN_KERNEL_PRINT_H_
