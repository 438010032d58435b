// qkv: the umbrella header. Include this to get the whole public API.
#pragma once

#include "tensor/error.h"
#include "io/batching.h"
#include "io/conll.h"
#include "io/splitmix64.h"
#include "io/vocab.h"
