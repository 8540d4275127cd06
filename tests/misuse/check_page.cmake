# Fails unless PAGE is what TABLES prints now: docs/misuse.md must be
# regenerated (`misuse_tables > docs/misuse.md`) whenever a row changes.
execute_process(COMMAND ${TABLES} OUTPUT_VARIABLE printed RESULT_VARIABLE result)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "misuse_tables failed: ${result}")
endif()
file(READ ${PAGE} written)
if(NOT printed STREQUAL written)
  message(FATAL_ERROR "${PAGE} is out of date: run misuse_tables > docs/misuse.md")
endif()
