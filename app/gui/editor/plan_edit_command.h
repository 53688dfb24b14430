#pragma once

#include <QUndoCommand>

#include "plan/plan.h"

namespace stagecraft::gui {

class PlanSession;

/// Kinds of edit; a drag that emits many steps of one kind and gesture merges them.
enum class PlanEditKind { Invalid = 0, MoveBoundary, MoveLayers, AddDevice, RemoveDevice, AddStage, RemoveStage,
                          Request, Replace };

/// One undoable change of a PlanSession's plan: the plan before and after. Structural
/// edits are computed by PlanEdits; this command only swaps whole plans, so undo restores
/// exactly the previous plan (and therefore the previous evaluation).
class PlanEditCommand : public QUndoCommand {
 public:
  PlanEditCommand(PlanSession* session, Plan before, Plan after, const QString& text,
                  PlanEditKind kind = PlanEditKind::Invalid, int gesture = 0);

  void undo() override;
  void redo() override;
  /// Mergeable only for a non-zero gesture: `kind` for the first command of a gesture.
  int id() const override;
  bool mergeWith(const QUndoCommand* other) override;

 private:
  PlanSession* session_;
  Plan before_;
  Plan after_;
  PlanEditKind kind_;
  int gesture_;
};

}  // namespace stagecraft::gui
