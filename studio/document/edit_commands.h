// The undo command of every studio edit: a QUndoCommand holding an Edit (studio/edits.h), whose
// redo() writes the "after" patch into the document and undo() the "before" patch. The document
// then runs type inference again and emits its change signals. Consecutive moves of the same
// selection merge into one command (QUndoCommand::mergeWith), so a drag is one undo step.
//
// Usage (Document does this; edits are planned by studio/edits.h):
//   stack.push(new EditCommand(document, std::move(edit)));   // push() calls redo()
#pragma once

#include <QUndoCommand>

#include "studio/document/edits.h"

namespace tessera::studio {

class Document;

class EditCommand : public QUndoCommand {
 public:
  // `document` outlives the command (it owns the stack holding it).
  EditCommand(Document& document, Edit edit);

  void redo() override;
  void undo() override;
  // Moves merge with moves of the same nodes; every other edit is its own step (id -1).
  int id() const override;
  bool mergeWith(const QUndoCommand* other) override;

  const Edit& edit() const { return edit_; }

 private:
  Document& document_;
  Edit edit_;
};

}  // namespace tessera::studio
