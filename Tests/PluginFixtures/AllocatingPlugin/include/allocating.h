/* Test fixture: a plugin that allocates in `process` (see allocating.c). */
#ifndef AGRAPH_TEST_ALLOCATING_H
#define AGRAPH_TEST_ALLOCATING_H
#endif
