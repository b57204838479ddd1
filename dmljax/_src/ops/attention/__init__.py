"""The attention family of DirectML's catalog: one module an operator or operator group, each record
with its formula below it (`dmljax ops --all --sort family` lists the family's operators)."""
