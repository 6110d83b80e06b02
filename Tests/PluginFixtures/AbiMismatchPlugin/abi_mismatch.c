#include "abi_mismatch.h"
