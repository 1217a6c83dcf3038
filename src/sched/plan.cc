#include "sched/plan.h"
