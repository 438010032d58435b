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

#include "nn/activation.h"
#include "nn/container.h"
#include "nn/dropout.h"
#include "nn/functional.h"
#include "nn/init.h"
#include "nn/layer_norm.h"
#include "nn/linear.h"
#include "nn/module.h"

#include "io/batching.h"
#include "io/conll.h"
#include "io/image.h"
#include "io/plot.h"
#include "io/splitmix64.h"
#include "io/vocab.h"
