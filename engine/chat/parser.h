#pragma once
// The Jinja parser: tokens to a syntax tree, with jinja2's grammar and operator precedence, the
// loopcontrols extension ({% break %}, {% continue %}) and transformers' {% generation %} tag.

#include "chat/ast.h"
#include "chat/lexer.h"

#include <vector>

namespace oxinfer::jinja {

// Throws SyntaxError (message and source offset).
Body parse(std::vector<Token> tokens);

}  // namespace oxinfer::jinja
