#include "engine/runtime/interpreter.h"
