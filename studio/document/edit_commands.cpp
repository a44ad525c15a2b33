// EditCommand: applying an Edit's patches through the document, and merging moves.
#include "studio/document/edit_commands.h"

#include "studio/document/document.h"

namespace tessera::studio {

namespace {

constexpr int kMoveCommandId = 1;

}  // namespace

EditCommand::EditCommand(Document& document, Edit edit)
    : QUndoCommand(QString::fromStdString(edit.text)),
      document_(document),
      edit_(std::move(edit)) {}

void EditCommand::redo() {
  document_.apply_change(edit_.change.after, edit_.change.before);
}

void EditCommand::undo() {
  document_.apply_change(edit_.change.before, edit_.change.after);
}

int EditCommand::id() const {
  return edit_.kind == EditKind::kMoveNodes ? kMoveCommandId : -1;
}

bool EditCommand::mergeWith(const QUndoCommand* other) {
  if (other->id() != id() || id() < 0) return false;
  const auto* move = static_cast<const EditCommand*>(other);
  if (move->edit_.nodes != edit_.nodes) return false;  // another selection: its own step
  edit_.change.after.positions = move->edit_.change.after.positions;
  return true;
}

}  // namespace tessera::studio
