#include "tap.h"
void suite_names(void)
{
}
