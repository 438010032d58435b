// qkv: the umbrella header. Include this to get the whole public API.
#pragma once

#include "autograd/grad_mode.h"
#include "autograd/gradcheck.h"
#include "tensor/error.h"
#include "tensor/factories.h"
#include "tensor/index_tensor.h"
#include "tensor/random.h"
#include "tensor/tensor.h"
#include "tensor/threads.h"
