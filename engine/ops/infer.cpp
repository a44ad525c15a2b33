#include "engine/ops/infer.h"
