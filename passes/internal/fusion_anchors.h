// The anchored groups of fusion phase 1 (see passes/fusion.h): each builder
// takes an unassigned node of its op and forms its group, absorbing the
// neighbours the pattern allows. Internal to passes/fusion*.cc.
#ifndef SHAPESHIFT_PASSES_INTERNAL_FUSION_ANCHORS_H_
#define SHAPESHIFT_PASSES_INTERNAL_FUSION_ANCHORS_H_

#include "passes/fusion_plan.h"
#include "passes/internal/grouping.h"

namespace shapeshift::passes::internal {

// Forms the group anchored at `node` if its op anchors one; false when the
// node is left for the elementwise phase.
bool BuildAnchoredGroup(Grouping& grouping, Node* node);

}  // namespace shapeshift::passes::internal

#endif  // SHAPESHIFT_PASSES_INTERNAL_FUSION_ANCHORS_H_
