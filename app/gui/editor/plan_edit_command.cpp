#include "editor/plan_edit_command.h"

#include "editor/plan_edits.h"
#include "editor/plan_session.h"

namespace stagecraft::gui {

PlanEditCommand::PlanEditCommand(PlanSession* session, Plan before, Plan after, const QString& text,
                                 PlanEditKind kind, int gesture)
    : QUndoCommand(text), session_(session), before_(std::move(before)), after_(std::move(after)), kind_(kind),
      gesture_(gesture) {}

void PlanEditCommand::undo() { session_->applyPlan(before_); }

void PlanEditCommand::redo() { session_->applyPlan(after_); }

int PlanEditCommand::id() const { return gesture_ != 0 ? static_cast<int>(kind_) : -1; }

bool PlanEditCommand::mergeWith(const QUndoCommand* other) {
  const auto* next = dynamic_cast<const PlanEditCommand*>(other);
  if (next == nullptr || next->kind_ != kind_ || next->gesture_ != gesture_ || gesture_ == 0) return false;
  after_ = next->after_;
  setObsolete(samePlan(before_, after_));
  return true;
}

}  // namespace stagecraft::gui
