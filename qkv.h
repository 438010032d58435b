// qkv: the umbrella header. Include this to get the whole public API.
#pragma once

#include "tensor/error.h"
