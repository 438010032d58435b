// qkv::nn::functional: the stateless forms of layers and the losses.
#pragma once

#include "nn/functional/attention.h"
#include "nn/functional/banded_attention.h"
#include "nn/functional/basic.h"
#include "nn/functional/conv.h"
#include "nn/functional/loss.h"
#include "nn/functional/pooling.h"
