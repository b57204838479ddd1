"""The recurrent family of DirectML's catalog (RNN, LSTM, GRU): one module, each record with its
formula below it (`dmljax ops --all --sort family` lists the family's operators)."""
